/*
 * protobuf.c - the minimal Protocol Buffers encoder (see protobuf.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "protobuf.h"
#include "util.h"

void ls_pb_init(struct ls_pb *pb)
{
	memset(pb, 0, sizeof(*pb));
}

void ls_pb_release(struct ls_pb *pb)
{
	free(pb->buf);
	ls_pb_init(pb);
}

int ls_pb_error(const struct ls_pb *pb)
{
	return pb->err;
}

/* Room for more bytes; 0, or -ENOMEM (then sticky). */
static int reserve(struct ls_pb *pb, size_t more)
{
	if (pb->err)
		return pb->err;
	if (LS_GROW(pb->buf, pb->len + more, pb->cap))
		return pb->err = -ENOMEM;
	return 0;
}

size_t ls_pb_varint_encode(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Raw varint, no key (inside a packed field, or the key itself). */
static void ls_pb_put_varint(struct ls_pb *pb, uint64_t v)
{
	if (reserve(pb, LS_PB_VARINT_MAX))
		return;
	pb->len += ls_pb_varint_encode(pb->buf + pb->len, v);
}

static void put_key(struct ls_pb *pb, uint32_t field, unsigned wire)
{
	ls_pb_put_varint(pb, (uint64_t)field << 3 | wire);
}

void ls_pb_uint(struct ls_pb *pb, uint32_t field, uint64_t v)
{
	put_key(pb, field, LS_PB_VARINT);
	ls_pb_put_varint(pb, v);
}

void ls_pb_uint_nz(struct ls_pb *pb, uint32_t field, uint64_t v)
{
	if (v)
		ls_pb_uint(pb, field, v);
}

void ls_pb_int(struct ls_pb *pb, uint32_t field, int64_t v)
{
	ls_pb_uint(pb, field, (uint64_t)v);
}

void ls_pb_int_nz(struct ls_pb *pb, uint32_t field, int64_t v)
{
	if (v)
		ls_pb_int(pb, field, v);
}

void ls_pb_bool_nz(struct ls_pb *pb, uint32_t field, int v)
{
	if (v)
		ls_pb_uint(pb, field, 1);
}

void ls_pb_raw(struct ls_pb *pb, const void *data, size_t len)
{
	if (!len || reserve(pb, len))
		return;
	memcpy(pb->buf + pb->len, data, len);
	pb->len += len;
}

/* A length-delimited field: bytes or a string (len may be 0). */
static void ls_pb_bytes(struct ls_pb *pb, uint32_t field, const void *data,
		 size_t len)
{
	put_key(pb, field, LS_PB_LEN);
	ls_pb_put_varint(pb, len);
	ls_pb_raw(pb, data, len);
}

void ls_pb_string(struct ls_pb *pb, uint32_t field, const char *s)
{
	ls_pb_bytes(pb, field, s, strlen(s));
}

void ls_pb_packed_u64(struct ls_pb *pb, uint32_t field, const uint64_t *v,
		      size_t n)
{
	size_t mark, i;

	if (!n)
		return;
	mark = ls_pb_open(pb, field);
	for (i = 0; i < n; i++)
		ls_pb_put_varint(pb, v[i]);
	ls_pb_close(pb, mark);
}

/* int64 goes on the wire as its two's complement: the same varints as
 * the uint64 of the same bits (C lets the unsigned type alias it). */
void ls_pb_packed_i64(struct ls_pb *pb, uint32_t field, const int64_t *v,
		      size_t n)
{
	ls_pb_packed_u64(pb, field, (const uint64_t *)v, n);
}

size_t ls_pb_open(struct ls_pb *pb, uint32_t field)
{
	put_key(pb, field, LS_PB_LEN);
	return pb->len;
}

/* The body written since mark moves up to make room for its length. */
void ls_pb_close(struct ls_pb *pb, size_t mark)
{
	uint8_t len[LS_PB_VARINT_MAX];
	size_t body, k;

	if (pb->err)
		return;
	body = pb->len - mark;
	k = ls_pb_varint_encode(len, body);
	if (reserve(pb, k))
		return;
	memmove(pb->buf + mark + k, pb->buf + mark, body);
	memcpy(pb->buf + mark, len, k);
	pb->len += k;
}
