/* expect: 34 (0, 3, ..., 99) */
void f(void) { int s = 0; for (int i = 0; i < 100; i += 3) { s += i; /* MARK */ } }
