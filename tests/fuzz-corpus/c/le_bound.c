/* expect: 11 */
void f(void) { int s = 0; for (int i = 0; i <= 10; i++) { s += i; /* MARK */ } }
