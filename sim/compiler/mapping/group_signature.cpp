#include "sim/compiler/mapping/group_signature.h"

#include <algorithm>
#include <cstring>

namespace npusim {

GroupSignature::GroupSignature(const Graph& graph, const LayerGroup& group,
                               const TensorLayouts& layouts)
    : graph_(graph), layouts_(layouts) {
  add_group(group);
}

GroupSignature::GroupSignature(const Graph& graph, const std::vector<const LayerGroup*>& run,
                               const TensorLayouts& layouts)
    : graph_(graph), layouts_(layouts) {
  add(run.size());
  for (const LayerGroup* group : run) add_group(*group);
}

void GroupSignature::add_group(const LayerGroup& group) {
  auto add_text = [&](const std::string& s) {
    add(s.size());
    text_ += s;
  };
  // Its kind depends on more than the group: a Transpose is a view only if MatMuls alone read its
  // output as their right operand, or if it keeps the plane of the image its bytes come from.
  add(static_cast<std::uint64_t>(group_kind(graph_, group)));
  add(group.layers.size());
  for (const std::uint32_t l : group.layers) {
    const Layer& layer = graph_.layers[l];
    add_text(layer.op);
    for (const std::vector<std::uint32_t>* list : {&layer.inputs, &layer.outputs}) {
      add(list->size());
      for (const std::uint32_t t : *list) add_tensor(t);
    }
    add(layer.attrs.ints.size());
    for (const auto& [key, values] : layer.attrs.ints) {
      add_text(key);
      add(values.size());
      for (const std::int64_t v : values) add(static_cast<std::uint64_t>(v));
    }
    add(layer.attrs.floats.size());
    for (const auto& [key, value] : layer.attrs.floats) {
      add_text(key);
      std::uint64_t bits = 0;
      std::memcpy(&bits, &value, sizeof bits);
      add(bits);
    }
    add(layer.attrs.strings.size());
    for (const auto& [key, value] : layer.attrs.strings) {
      add_text(key);
      add_text(value);
    }
  }
  add_tensor(group.output);
  add(group.extra_constants.size());
  for (const std::uint32_t t : group.extra_constants) add_tensor(t);
  add(group.residual ? 1 : 0);
  if (group.residual) add_tensor(*group.residual);
}

std::uint64_t GroupSignature::local(std::uint32_t tensor) const {
  const auto it = std::find(tensors_.begin(), tensors_.end(), tensor);
  return static_cast<std::uint64_t>(it - tensors_.begin());
}

void GroupSignature::add(std::uint64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  text_.append(bytes, sizeof v);
}

// A tensor by its place; its properties the first time the group names it.
void GroupSignature::add_tensor(std::uint32_t tensor) {
  const std::uint64_t place = local(tensor);
  add(place);
  if (place < tensors_.size()) return;
  tensors_.push_back(tensor);
  const Tensor& t = graph_.tensors[tensor];
  add(static_cast<std::uint64_t>(t.dtype));
  add(t.shape.size());
  for (const std::uint64_t d : t.shape) add(d);
  add(t.layout.size());
  text_ += t.layout;
  add((t.constant ? 1 : 0) | (layouts_.is_image(tensor) ? 2 : 0));
}

void GroupSignature::add_tensor_place(std::uint32_t tensor) {
  const std::uint64_t place = local(tensor);
  add(place);
  if (place == tensors_.size()) add(graph_.tensors[tensor].bytes());
}

std::string GroupSignature::with(std::optional<std::uint32_t> on_chip_input,
                                 const OnChipContext& context, std::uint64_t flags) const {
  GroupSignature s = *this;
  s.add(on_chip_input ? 1 : 0);
  if (on_chip_input) s.add_tensor_place(*on_chip_input);
  s.add(context.resident_inputs.size());
  for (const std::uint32_t t : context.resident_inputs) s.add_tensor_place(t);
  s.add(context.output_resident ? 1 : 0);
  s.add(context.other_bytes);
  s.add(flags);
  return std::move(s.text_);
}

}  // namespace npusim
