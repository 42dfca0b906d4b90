/* expect: needs_trace (break) */
void f(int n, int *a) { for (int i = 0; i < n; i++) { if (a[i]) break; a[i] = 1; /* MARK */ } }
