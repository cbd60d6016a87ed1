// The target's functions are inline, in include/CLocalLMDBBase.h; SwiftPM needs a source file.
#include "CLocalLMDBBase.h"
