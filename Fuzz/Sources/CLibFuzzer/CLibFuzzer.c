// The declarations of CLibFuzzer.h are libFuzzer's own; SwiftPM wants a source file in a C target.
#include "CLibFuzzer.h"
