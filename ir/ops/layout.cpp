// Op group "layout": see ir/op_table.h. Entries are added as the group is written.
#include "ir/op_table.h"

namespace eqfuse::ir {

void register_layout_ops(OpTableBuilder& /*table*/) {}

}  // namespace eqfuse::ir
