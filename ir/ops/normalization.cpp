// Op group "normalization": see ir/op_table.h. Entries are added as the group is written.
#include "ir/op_table.h"

namespace eqfuse::ir {

void register_normalization_ops(OpTableBuilder& /*table*/) {}

}  // namespace eqfuse::ir
