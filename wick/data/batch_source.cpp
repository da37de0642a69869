#include <wick/data/batch_source.h>

namespace wick {

int64_t Batch::size() const {
  if (inputs.defined() && inputs.dim() > 0) return inputs.size(0);
  for (const auto& [name, t] : fields.fields())
    if (t.defined() && t.dim() > 0) return t.size(0);
  return 0;
}

}  // namespace wick
