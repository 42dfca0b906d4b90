/* expect: 7 (64, 32, ..., 1) */
void f(void) { int s = 0; for (int i = 64; i > 0; i /= 2) { s += i; /* MARK */ } }
