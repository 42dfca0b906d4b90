/* expect: needs_trace (data-dependent while) */
void f(double *a) { int i = 0; while (a[i] > 0.0) { a[i] = 0.0; i++; /* MARK */ } }
