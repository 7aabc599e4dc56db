/* COBS and CRC-32 for the serial protocol; see frame.h and docs/protocol.md. */
#include "frame.h"

/* Nibble table: 64 bytes of flash instead of 1 KiB, fast enough for serial rates. */
static const uint32_t kCrcNibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
    0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t aot_crc32(uint32_t crc, const uint8_t* data, size_t len) {
  crc = ~crc;
  for (size_t i = 0; i < len; ++i) {
    crc ^= data[i];
    crc = (crc >> 4) ^ kCrcNibble[crc & 0x0Fu];
    crc = (crc >> 4) ^ kCrcNibble[crc & 0x0Fu];
  }
  return ~crc;
}

size_t aot_cobs_encode(const uint8_t* in, size_t len, uint8_t* out) {
  size_t code_at = 0; /* where the current block's code byte goes */
  size_t o = 1;
  uint8_t code = 1;
  for (size_t i = 0; i < len; ++i) {
    if (in[i] == 0u) {
      out[code_at] = code;
      code_at = o++;
      code = 1;
    } else {
      out[o++] = in[i];
      if (++code == 0xFFu) { /* full block of 254 non-zero bytes, no implied zero */
        out[code_at] = code;
        code_at = o++;
        code = 1;
      }
    }
  }
  out[code_at] = code;
  return o;
}

aot_error_t aot_cobs_decode(uint8_t* buf, size_t len, size_t* out_len) {
  size_t i = 0;
  size_t o = 0; /* o <= i always holds, so decoding in place is safe */
  while (i < len) {
    const uint8_t code = buf[i++];
    if (code == 0u || (size_t)(code - 1u) > len - i) {
      return AOT_ERR_PROTOCOL_BAD_ENCODING;
    }
    for (uint8_t k = 1; k < code; ++k) {
      const uint8_t byte = buf[i++];
      if (byte == 0u) {
        return AOT_ERR_PROTOCOL_BAD_ENCODING;
      }
      buf[o++] = byte;
    }
    if (code != 0xFFu && i < len) {
      buf[o++] = 0u;
    }
  }
  *out_len = o;
  return AOT_OK;
}
