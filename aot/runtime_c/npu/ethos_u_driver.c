/*
 * Compiles the user's Ethos-U core driver in place: ETHOSU_DRIVER_DIR/src is on the
 * include path, and this file includes its sources, so the driver is built with the
 * project's flags without being copied into the project (it is the user's, like any
 * vendor driver). ETHOSU55 / ETHOSU65 / ETHOSU85 select the device file, as the driver's
 * own CMake does.
 */
#include "ethosu_driver.c"
#include "ethosu_pmu.c"
#if defined(ETHOSU55) || defined(ETHOSU65)
#include "ethosu_device_u55_u65.c"
#elif defined(ETHOSU85)
#include "ethosu_device_u85.c"
#else
#error "define ETHOSU55, ETHOSU65 or ETHOSU85 (from the --accelerator name)"
#endif
