/*
 * fuzz-cfi.c - the .eh_frame reader (common/cfi.c, ls_cfi_rule_in): the
 * eBPF tracer, run as root, reads the unwind tables of another process's
 * files, which in a container are that container's to write.
 *
 * Input: u32 offset of .eh_frame_hdr in the image, u32 offset of the pc,
 * u8 exact (bit 0), then the module's image (its PT_LOAD segments at
 * their virtual addresses, tests/fuzz/cfi-seed.py makes them from a real
 * binary).  The image is copied into a buffer of its exact size, so that
 * AddressSanitizer sees any read outside [lo, hi), which the reader
 * promises never to make; the rule it returns is never LS_CFI_NONE.
 */
#include <stdlib.h>
#include <string.h>
#include "../../common/cfi.h"
#include "fuzz.h"

#define HEAD 9

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	union ls_cfi_rule r;
	uint32_t hdr_off, pc_off;
	uint8_t *img;
	size_t len;

	if (size <= HEAD)
		return 0;
	memcpy(&hdr_off, data, 4);
	memcpy(&pc_off, data + 4, 4);
	len = size - HEAD;
	img = malloc(len);
	if (!img)
		fuzz_fail("out of memory");
	memcpy(img, data + HEAD, len);
	r.word = ls_cfi_rule_in((uint64_t)(uintptr_t)img,
				(uint64_t)(uintptr_t)img + len,
				img + hdr_off % len,
				(uint64_t)(uintptr_t)img + pc_off, data[8] & 1);
	if (LS_CFI_KIND(r.f.bits) == LS_CFI_NONE ||
	    LS_CFI_KIND(r.f.bits) > LS_CFI_STOP)
		fuzz_fail("rule of kind %u", LS_CFI_KIND(r.f.bits));
	free(img);
	return 0;
}
