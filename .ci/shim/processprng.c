/* bcryptprimitives.dll for Wine releases that lack it (Debian's Wine 8).
 *
 * Rust's standard library (1.78 and later) gets its random bytes from
 * ProcessPrng in bcryptprimitives.dll; without the DLL no Rust program
 * starts. This stand-in exports ProcessPrng and draws the bytes from
 * RtlGenRandom (advapi32's SystemFunction036), which Wine implements.
 * Built by .ci/windows-tests; never shipped.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
