/* expect: sum_{i=0}^{n-1} min(i, m) */
void f(int n, int m) { int s = 0; for (int i = 0; i < n; i++) for (int j = 0; j < (i < m ? i : m); j++) { s += j; /* MARK */ } }
