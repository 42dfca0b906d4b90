/* expect: sum_{i=0}^{n-1} (m + i) = n*m + n(n-1)/2 */
void f(int n, int m) { int s = 0; for (int i = 0; i < n; i++) for (int j = 0; j < m + i; j++) { s += j; /* MARK */ } }
