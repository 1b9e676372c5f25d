// The program that compiles the tests' precompiled header (tests/CMakeLists.txt):
// the tests reuse the header; the program itself does nothing.
int main() { return 0; }
