/*
 * crc32c.h: CRC-32C (Castagnoli), and the record checksum of annlab's own
 * formats built on it.
 *
 * ann_crc32c is the standard CRC-32C (iSCSI, ext4, RocksDB): reflected
 * polynomial 0x82F63B78, initial value and final xor ~0, so
 * ann_crc32c(0, "123456789", 9) == 0xE3069283.  SSE4.2's crc32
 * instruction where the CPU has it (chosen once at start-up, as the
 * distance kernels are), a slicing-by-8 table otherwise; both give the
 * same value for every input.
 *
 * ann_checksum is what annlab's formats store beside each block or record
 * (flat vector blocks, sector-file node records, IVF coarse centroids, kv
 * values).  It is checked on every read of a record, so its cost is on the
 * search path: one crc32 instruction per 8 bytes is latency-bound (3
 * cycles), so records of 192 bytes or more are split into three lanes of
 * equal 8-byte-multiple length (the third takes the remainder) whose CRCs
 * run interleaved, and the result is lane0 ^ rotl(lane1, 11) ^
 * rotl(lane2, 22), each lane a CRC-32C.  Any change confined to one lane
 * (a single flipped bit, a burst of up to 32 bits) changes exactly one
 * lane's CRC and so the checksum; shorter records are one CRC-32C.
 * Thread-safe; no allocation.
 */
#ifndef ANNLAB_CORE_CRC32C_H
#define ANNLAB_CORE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of len bytes at buf, continuing crc (0 to start). */
uint32_t ann_crc32c(uint32_t crc, const void *buf, size_t len);

/* The table-driven reference, for tests and for CPUs without SSE4.2. */
uint32_t ann_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* The record checksum described above. */
uint32_t ann_checksum(const void *buf, size_t len);

/* "sse4.2" or "table": which implementation ann_crc32c uses here. */
const char *ann_crc32c_impl(void);

#endif
