/*
 * protobuf.h - a minimal Protocol Buffers encoder, enough to write
 * google/pprof's profile.proto (docs/PPROF.md): varint and
 * length-delimited fields, nested messages, packed repeated varints.
 *
 * Wire format (developers.google.com/protocol-buffers/docs/encoding): a
 * field is a key varint (field number << 3 | wire type) and a value; wire
 * type 0 is a varint, 2 a length varint followed by that many bytes.
 * Negative int64 values are written as their two's complement in ten
 * bytes, as protobuf's int64 (not sint64) requires.
 *
 * The message is built in one growable buffer.  A nested message is
 * opened with ls_pb_open(), which remembers where it starts, and closed
 * with ls_pb_close(), which inserts its length in front of it: sub-messages
 * are small, so the move costs little and nothing is encoded twice.
 *
 * Errors are sticky: after an allocation failure every call is a no-op and
 * ls_pb_error() returns -ENOMEM, so a writer checks once at the end.
 * Not thread-safe; one encoder per thread.  Never prints.
 */
#ifndef LEAKSCOPE_PROTOBUF_H
#define LEAKSCOPE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

/* Longest encoding of a 64-bit varint. */
#define LS_PB_VARINT_MAX 10

struct ls_pb {
	uint8_t *buf;		/* owned; the encoded bytes */
	size_t len, cap;
	int err;		/* 0 or -ENOMEM, sticky */
};

/* Wire types. */
enum { LS_PB_VARINT = 0, LS_PB_LEN = 2 };

/* An empty encoder; needs no allocation until the first field. */
void ls_pb_init(struct ls_pb *pb);
/* Free the buffer and reset to empty; accepts an initialised encoder. */
void ls_pb_release(struct ls_pb *pb);
/* 0, or -ENOMEM if any earlier call failed to grow the buffer. */
int ls_pb_error(const struct ls_pb *pb);

/*
 * Encode v as a varint into out (at least LS_PB_VARINT_MAX bytes);
 * returns the byte count.  Pure: no encoder needed.
 */
size_t ls_pb_varint_encode(uint8_t *out, uint64_t v);


/*
 * Scalar fields.  ls_pb_uint writes the field even when v is 0; the
 * _nz variants skip a zero, which proto3 readers take as the default.
 * ls_pb_int takes a signed value (two's complement, int64 encoding).
 */
void ls_pb_uint(struct ls_pb *pb, uint32_t field, uint64_t v);
void ls_pb_uint_nz(struct ls_pb *pb, uint32_t field, uint64_t v);
void ls_pb_int(struct ls_pb *pb, uint32_t field, int64_t v);
void ls_pb_int_nz(struct ls_pb *pb, uint32_t field, int64_t v);
void ls_pb_bool_nz(struct ls_pb *pb, uint32_t field, int v);

void ls_pb_string(struct ls_pb *pb, uint32_t field, const char *s);

/* Bytes already encoded (another encoder's fields), appended as they
 * are. */
void ls_pb_raw(struct ls_pb *pb, const void *data, size_t len);

/* Packed repeated varints (uint64, or int64 as two's complement); writes
 * nothing for n == 0. */
void ls_pb_packed_u64(struct ls_pb *pb, uint32_t field, const uint64_t *v,
		      size_t n);
void ls_pb_packed_i64(struct ls_pb *pb, uint32_t field, const int64_t *v,
		      size_t n);

/*
 * A nested message: mark = ls_pb_open(pb, field); fields...;
 * ls_pb_close(pb, mark).  Messages nest freely as long as they close in
 * reverse order.
 */
size_t ls_pb_open(struct ls_pb *pb, uint32_t field);
void ls_pb_close(struct ls_pb *pb, size_t mark);

#endif /* LEAKSCOPE_PROTOBUF_H */
