#include <vector>
namespace solver {
template <typename T> struct Grid { std::vector<T> v; };
extern "C" int kernel(int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) { auto f = [&](int x) { return x * i; }; s += f(2); }
  return s;
}
}
int main(int argc, char **argv) { return solver::kernel(argc * 10); }
