// The eslease tool's portable launcher. The bundle (cmake/bundle-tool.sh) holds this
// launcher as `eslease`, the real tool as `eslease-real`, and in lib/ the dynamic loader and
// every shared library the tool loads. This program is linked statically, so it runs in any
// x86-64 Linux image (another libc, another glibc age, no shell); it starts the bundled
// loader on the real tool with the bundled libraries only, keeping the arguments, argv[0]
// and the environment. Nothing is set in the environment, so the command that
// `eslease run` starts sees the image's own libraries, not ours.
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The directory this launcher lives in: from /proc/self/exe, or from a path in argv[0]
// where /proc is not mounted.
static int bundle_directory(const char* argv0, char* dir, size_t size) {
  ssize_t length = readlink("/proc/self/exe", dir, size - 1);
  if (length > 0) {
    dir[length] = '\0';
  } else if (strchr(argv0, '/') == NULL || realpath(argv0, dir) == NULL) {
    return -1;
  }
  char* slash = strrchr(dir, '/');
  if (slash == NULL) return -1;
  if (slash == dir) {
    slash[1] = '\0';
  } else {
    *slash = '\0';
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* argv0 = argc > 0 ? argv[0] : "eslease";
  char dir[PATH_MAX];
  if (bundle_directory(argv0, dir, sizeof dir) != 0) {
    fprintf(stderr,
            "eslease: cannot find the directory of the bundle (/proc is not mounted and argv[0] "
            "has no path); start it by its full path\n");
    return 127;
  }
  char loader[PATH_MAX + 32];
  char library_path[PATH_MAX + 8];
  char real_tool[PATH_MAX + 16];
  snprintf(loader, sizeof loader, "%s/lib/ld-linux-x86-64.so.2", dir);
  snprintf(library_path, sizeof library_path, "%s/lib", dir);
  snprintf(real_tool, sizeof real_tool, "%s/eslease-real", dir);

  // loader --inhibit-cache --library-path DIR/lib --argv0 ARGV0 DIR/eslease-real ARGS... NULL
  char** args = calloc((size_t)argc + 8, sizeof *args);
  if (args == NULL) {
    fprintf(stderr, "eslease: out of memory\n");
    return 127;
  }
  int n = 0;
  args[n++] = loader;
  args[n++] = "--inhibit-cache";
  args[n++] = "--library-path";
  args[n++] = library_path;
  args[n++] = "--argv0";
  args[n++] = (char*)argv0;
  args[n++] = real_tool;
  for (int i = 1; i < argc; ++i) args[n++] = argv[i];
  args[n] = NULL;
  execv(loader, args);
  fprintf(stderr, "eslease: cannot start %s: %s\n", loader, strerror(errno));
  return 127;
}
