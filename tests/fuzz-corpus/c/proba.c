/* expect: 0.25 x 40 = 10 */
#define MPICAST_PROBA(c, p) (c)
void f(double *a) { for (int i = 0; i < 40; i++) { if (MPICAST_PROBA(a[i] > 0.5, 0.25)) { a[i] = 0.0; /* MARK */ } } }
