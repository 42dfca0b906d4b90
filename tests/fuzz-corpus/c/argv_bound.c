/* expect: n, a parameter read from argv[1] */
#include <stdlib.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    double s = 0;
    for (int i = 0; i < n; i++) { s += i; /* MARK */ }
    return (int)s;
}
