// Whether the test executable this is linked into reads ../shared (tests/CMakeLists.txt builds
// it twice, with EQFUSE_NEEDS_SHARED true and false, and eqfuse_test picks one).
#include "tests/test_data.h"

namespace eqfuse::test {
extern const bool kNeedsShared = EQFUSE_NEEDS_SHARED;
}
