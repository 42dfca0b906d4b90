/* expect: 64 */
#define N 64
void f(void) { int s = 0; for (int i = 0; i < N; i++) { s += i; /* MARK */ } }
