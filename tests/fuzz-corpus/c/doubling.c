/* expect: 10 (1, 2, 4, ..., 512) */
void f(void) { int s = 0; for (int i = 1; i < 1000; i *= 2) { s += i; /* MARK */ } }
