/*
 * The one error enum of the aot C runtime and of generated model code.
 *
 * A code is (category << 8) | code, so the category of any failure can be read
 * from the high byte without a table. AOT_OK is 0. Values are part of the serial
 * protocol and of the model ABI: never renumber, only append. The host keeps a
 * copy of this table in aot/device/error_codes.py; a unit test checks they agree.
 */
#ifndef AOT_ERROR_H_
#define AOT_ERROR_H_

#ifdef __cplusplus
extern "C" {
#endif

#define AOT_ERR_CATEGORY_MODEL 0x01u    /* generated model code */
#define AOT_ERR_CATEGORY_PROTOCOL 0x02u /* serial protocol (server side) */
#define AOT_ERR_CATEGORY_PLATFORM 0x03u /* the port: serial, timer, board init */
#define AOT_ERR_CATEGORY_APP 0x04u      /* the runtime application (setup) */
#define AOT_ERR_CATEGORY_NPU 0x05u      /* an accelerator (device model or driver) */

#define AOT_ERROR_CATEGORY(err) ((((unsigned)(err)) >> 8) & 0xFFu)

typedef enum {
  AOT_OK = 0x0000, /* success */

  /* model execution */
  AOT_ERR_MODEL_BAD_ARGUMENT = 0x0101, /* NULL or misaligned input/output pointer */
  AOT_ERR_MODEL_KERNEL_FAILED = 0x0102, /* a kernel reported a failure */

  /* serial protocol */
  AOT_ERR_PROTOCOL_FRAME_TOO_LONG = 0x0201, /* no delimiter within the maximum frame size */
  AOT_ERR_PROTOCOL_BAD_ENCODING = 0x0202, /* COBS decoding failed */
  AOT_ERR_PROTOCOL_FRAME_TOO_SHORT = 0x0203, /* fewer bytes than header and CRC */
  AOT_ERR_PROTOCOL_BAD_LENGTH = 0x0204, /* length field disagrees with the frame size */
  AOT_ERR_PROTOCOL_BAD_CRC = 0x0205, /* CRC-32 mismatch */
  AOT_ERR_PROTOCOL_UNKNOWN_COMMAND = 0x0206, /* command byte not known to this device */
  AOT_ERR_PROTOCOL_BAD_PAYLOAD = 0x0207, /* payload size or field invalid for the command */
  AOT_ERR_PROTOCOL_BAD_INDEX = 0x0208, /* tensor index out of range */
  AOT_ERR_PROTOCOL_OUT_OF_RANGE = 0x0209, /* offset/length outside the tensor */
  AOT_ERR_PROTOCOL_VERSION_MISMATCH = 0x020A, /* host and device protocol major differ */

  /* platform (port) */
  AOT_ERR_PLATFORM_INIT_FAILED = 0x0301, /* aot_platform_init failed */
  AOT_ERR_PLATFORM_SERIAL_READ = 0x0302, /* serial read failed */
  AOT_ERR_PLATFORM_SERIAL_WRITE = 0x0303, /* serial write failed */
  AOT_ERR_PLATFORM_SERIAL_CLOSED = 0x0304, /* the serial stream ended (host: stdin closed) */

  /* application setup */
  AOT_ERR_APP_NO_MODEL = 0x0401, /* aot_app_model() returned NULL or a broken descriptor */
  AOT_ERR_APP_IO_ARENA_TOO_SMALL = 0x0402, /* AOT_APP_IO_BYTES smaller than the model needs */
  AOT_ERR_APP_TOO_MANY_TENSORS = 0x0403, /* more tensors than AOT_APP_MAX_TENSORS */

  /* accelerator */
  AOT_ERR_NPU_NOT_CONFIGURED = 0x0501, /* the NPU has no memory region set */
  AOT_ERR_NPU_BAD_STREAM = 0x0502, /* command stream magic, version or descriptor kind/size wrong */
  AOT_ERR_NPU_BAD_DESCRIPTOR = 0x0503, /* a descriptor's shapes or parameters are invalid */
  AOT_ERR_NPU_ADDRESS_OUT_OF_REGION = 0x0504, /* an operand lies outside the NPU's memory */
} aot_error_t;

#ifdef __cplusplus
}
#endif

#endif /* AOT_ERROR_H_ */
