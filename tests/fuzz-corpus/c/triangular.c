/* expect: n(n-1)/2 */
void f(int n) { int s = 0; for (int i = 0; i < n; i++) for (int j = 0; j < i; j++) { s += j; /* MARK */ } }
