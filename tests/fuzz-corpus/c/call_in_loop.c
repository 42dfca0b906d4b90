/* expect: body 50 times; kernel's ops per call scaled: 50 x 10 double adds */
static double kernel(double *a) { double s = 0; for (int k = 0; k < 10; k++) s += a[k]; return s; }
void f(double *a) { double t = 0; for (int i = 0; i < 50; i++) { t += kernel(a); /* MARK */ } }
