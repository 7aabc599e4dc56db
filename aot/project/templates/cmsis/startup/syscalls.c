/*
 * newlib system calls for bare metal, without semihosting.
 *
 * stdio is deliberately not connected: the console UART carries the aot serial
 * protocol, and stray printf text would corrupt frames. Writes are discarded (and
 * counted as written so printf does not loop), reads see end-of-file. malloc gets the
 * linker script's heap (__aot_heap_start..__aot_heap_end, size set when rendering it).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#undef errno
extern int errno;

extern char __aot_heap_start[];
extern char __aot_heap_end[];

/* Prototypes: newlib calls these; -Wmissing-prototypes wants them declared. */
void* _sbrk(ptrdiff_t increment);
int _write(int fd, const char* buf, int len);
int _read(int fd, char* buf, int len);
int _close(int fd);
int _fstat(int fd, struct stat* st);
int _isatty(int fd);
int _lseek(int fd, int offset, int whence);
int _kill(int pid, int sig);
int _getpid(void);
void _exit(int status);
void _init(void);
void _fini(void);

void* _sbrk(ptrdiff_t increment) {
  static char* brk = __aot_heap_start;
  if (increment < 0 || (size_t)(__aot_heap_end - brk) < (size_t)increment) {
    errno = ENOMEM;
    return (void*)-1;
  }
  char* previous = brk;
  brk += increment;
  return previous;
}

int _write(int fd, const char* buf, int len) {
  (void)fd;
  (void)buf;
  return len;
}

int _read(int fd, char* buf, int len) {
  (void)fd;
  (void)buf;
  (void)len;
  return 0;
}

int _close(int fd) {
  (void)fd;
  errno = EBADF;
  return -1;
}

int _fstat(int fd, struct stat* st) {
  (void)fd;
  st->st_mode = S_IFCHR;
  return 0;
}

int _isatty(int fd) {
  (void)fd;
  return 1;
}

int _lseek(int fd, int offset, int whence) {
  (void)fd;
  (void)offset;
  (void)whence;
  return 0;
}

int _kill(int pid, int sig) {
  (void)pid;
  (void)sig;
  errno = EINVAL;
  return -1;
}

int _getpid(void) {
  return 1;
}

/* main() returned (protocol QUIT): nothing left to do. There is no way to power off an
 * MPS2/MPS3 or QEMU machine without semihosting, so sleep; with interrupts masked and
 * none enabled the core stays here, and under QEMU -icount sleep=off no time passes. */
void _exit(int status) {
  (void)status;
  __asm volatile("cpsid i");
  for (;;) {
    __asm volatile("wfi");
  }
}

/* Called by __libc_init_array; crti.o is not linked (-nostartfiles). */
void _init(void) {}
void _fini(void) {}
