/* A tiny Windows DLL whose PDB the nettrail-symbols tests resolve addresses
 * against. Built without a CRT or Windows SDK by make.sh; see there. */

/* Keeps the compiler from folding the arithmetic away. */
static volatile int sink;

/* Inlined into checksum at -O2, so the PDB carries an inline site for it. */
static inline int mix(int value, int round) {
    int acc = value;
    for (int i = 0; i < round; i++) {
        acc = acc * 31 + i;
        sink = acc;
    }
    return acc;
}

__declspec(noinline) int checksum(int value) {
    int total = mix(value, sink + 3);
    return total ^ 0x5a5a;
}

__declspec(noinline) int build_request(int id) {
    int first = checksum(id);
    int second = checksum(id + 1);
    sink = first;
    return first + second;
}

__declspec(dllexport) int fixture_send(int id) {
    return build_request(id) + 1;
}

/* The DLL entry point: with no CRT there is no DllMain wrapper. */
int __stdcall fixture_entry(void *module, unsigned long reason, void *reserved) {
    (void)module;
    (void)reserved;
    return reason != 0;
}
