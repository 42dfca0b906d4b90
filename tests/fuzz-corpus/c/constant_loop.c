/* expect: 100 */
void f(void) { int s = 0; for (int i = 0; i < 100; i++) { s += i; /* MARK */ } }
