// The generated sources each include one public header; this prints how many compiled.
#include <cstdio>

int main() {
  std::printf("headers_alone: %d public headers compile alone\n", HERD_PUBLIC_HEADERS);
  return 0;
}
