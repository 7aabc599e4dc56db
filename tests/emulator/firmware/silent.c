/* Test firmware that never speaks the aot protocol: it boots, leaves the UART alone and
 * sleeps forever. The host must give up with a DeviceError once its timeout expires. */

int main(void) {
  for (;;) {
    __asm volatile("wfi");
  }
}
