/*
 * Framing of the aot serial protocol (docs/protocol.md): a frame is
 *   type u8 | seq u8 | length u16 LE | payload[length] | CRC-32 u32 LE
 * COBS-encoded and terminated by one 0x00 byte. Pure functions, no I/O, so the host
 * tests and every port share one implementation.
 */
#ifndef AOT_FRAME_H_
#define AOT_FRAME_H_

#include <stddef.h>
#include <stdint.h>

#include "aot/error.h"
#include "aot/protocol.h" /* version, commands, features: generated from aot/device/spec.py */

#define AOT_FRAME_HEADER_BYTES 4u
#define AOT_FRAME_CRC_BYTES 4u
#define AOT_FRAME_OVERHEAD (AOT_FRAME_HEADER_BYTES + AOT_FRAME_CRC_BYTES)
#define AOT_FRAME_DELIMITER 0x00u
/* Worst-case COBS size of n bytes, without the delimiter. */
#define AOT_COBS_MAX_ENCODED(n) ((n) + (n) / 254u + 1u)

/* CRC-32 (IEEE 802.3, reflected, as zlib.crc32). Start with crc = 0; chainable. */
uint32_t aot_crc32(uint32_t crc, const uint8_t* data, size_t len);

/* COBS-encodes len bytes into out (capacity AOT_COBS_MAX_ENCODED(len)); no delimiter.
 * Returns the encoded size. */
size_t aot_cobs_encode(const uint8_t* in, size_t len, uint8_t* out);

/* Decodes a COBS block (delimiter removed) in place; sets *out_len.
 * Returns AOT_OK or AOT_ERR_PROTOCOL_BAD_ENCODING. */
aot_error_t aot_cobs_decode(uint8_t* buf, size_t len, size_t* out_len);

/* Little-endian field access, independent of the CPU's byte order. */
static inline uint16_t aot_get_u16(const uint8_t* p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t aot_get_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline void aot_put_u16(uint8_t* p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void aot_put_u32(uint8_t* p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

#endif /* AOT_FRAME_H_ */
