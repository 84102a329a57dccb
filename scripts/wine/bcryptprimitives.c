/*
 * ProcessPrng for Wine releases without bcryptprimitives.dll (Debian 12
 * ships Wine 8.0). Go 1.22 and later fetch random bytes from it at start-up
 * and abort when the DLL is missing; this stand-in takes them from
 * RtlGenRandom (advapi32's SystemFunction036), which Wine has. It serves
 * the Windows test runs only and is never part of a release.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
