#ifndef CLIBFUZZER_H
#define CLIBFUZZER_H
#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (compiler-rt), linked by `-sanitize=fuzzer`: runs the fuzzing loop with
// `callback` from a `main` of the program's own.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
