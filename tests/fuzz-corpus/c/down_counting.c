/* expect: 10 */
void f(void) { int s = 0; for (int i = 10; i > 0; i--) { s += i; /* MARK */ } }
