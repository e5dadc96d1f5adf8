// The shared library's stand-ins for the four terminfo functions LLVM Support calls to ask whether
// a terminal shows colors. libtinfo.a is not position independent, so it cannot go into
// libfa4jit.so, and a library that never writes to a terminal needs no answer but "no": setupterm
// fails, so LLVM never calls the other three. Local to the library (runtime/fa4jit.map).
extern "C" {
int setupterm(const char *, int, int *errret) {
  if (errret)
    *errret = 0;
  return -1; // ERR
}
int tigetnum(const char *) { return -2; }
void *set_curterm(void *) { return nullptr; }
int del_curterm(void *) { return 0; }
}
