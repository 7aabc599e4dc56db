/* The runtime application: bring the board up, then serve the model over serial. */
#include "aot/app.h"
#include "aot/platform.h"
#include "server.h"
#include "stack.h"

int main(void) {
  /* Paint first, so every later frame (server and model) is measured. */
  aot_stack_paint();
  aot_error_t err = aot_platform_init();
  if (err != AOT_OK) {
    aot_platform_abort(err);
  }
  /* A setup error is not fatal: the server reports it in HELLO. */
  (void)aot_server_init(aot_app_model(), NULL, NULL); /* replies: the serial line */
  err = aot_server_serve();
  if (err != AOT_OK) {
    aot_platform_abort(err);
  }
  return 0; /* QUIT: host builds exit with 0; bare metal ends in the C library's _exit. */
}
