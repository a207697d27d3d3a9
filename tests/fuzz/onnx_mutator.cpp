// Structure-aware mutation for the onnx_proto target (docs/reliability.md). Byte-level mutations
// of a protobuf mostly make it unparseable, so the plain `onnx` target spends its time in
// protobuf's parser. Here each input is parsed as a ModelProto, one to four of its fields are
// changed the way a broken exporter or a hand-edited model would change them (dims, attributes,
// opset and IR version, initializer sizes and data location, node inputs and op types, nodes
// dropped or duplicated), and the model is serialised again, so that every input reaching the
// entry (fuzz_onnx) parses and the importer's own checks are what is exercised.
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using Rng = std::minstd_rand;

std::size_t pick(Rng& rng, std::size_t n) { return n == 0 ? 0 : rng() % n; }

// Sizes that break shape arithmetic: zero, one, negatives, powers of two near the limits.
std::int64_t interesting_int(Rng& rng) {
  static const std::int64_t kValues[] = {0,
                                         1,
                                         2,
                                         3,
                                         7,
                                         -1,
                                         -2,
                                         64,
                                         255,
                                         4096,
                                         65536,
                                         std::int64_t{1} << 31,
                                         (std::int64_t{1} << 32) + 1,
                                         std::int64_t{1} << 40,
                                         std::int64_t{1} << 62,
                                         INT64_MAX,
                                         INT64_MIN};
  if (rng() % 3 == 0) return static_cast<std::int64_t>(rng() % 17) - 4;
  return kValues[pick(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

void mutate_shape(onnx::TensorShapeProto* shape, Rng& rng) {
  switch (rng() % 4) {
    case 0:
      if (shape->dim_size() > 0) {
        auto* d = shape->mutable_dim(static_cast<int>(pick(rng, shape->dim_size())));
        if (rng() % 4 == 0) {
          d->set_dim_param("N");
        } else {
          d->set_dim_value(interesting_int(rng));
        }
      }
      break;
    case 1:
      shape->add_dim()->set_dim_value(interesting_int(rng));
      break;
    case 2:
      if (shape->dim_size() > 0) shape->mutable_dim()->RemoveLast();
      break;
    default:
      if (shape->dim_size() > 0) shape->mutable_dim(0)->clear_dim_value();  // unknown dim
      break;
  }
}

void mutate_value_info(onnx::ValueInfoProto* v, Rng& rng) {
  auto* type = v->mutable_type();
  if (rng() % 5 == 0) {
    type->mutable_tensor_type()->set_elem_type(static_cast<int>(rng() % 18));
    return;
  }
  mutate_shape(type->mutable_tensor_type()->mutable_shape(), rng);
}

void mutate_tensor(onnx::TensorProto* t, Rng& rng) {
  switch (rng() % 6) {
    case 0:
      if (t->dims_size() > 0) {
        t->set_dims(static_cast<int>(pick(rng, t->dims_size())), interesting_int(rng));
      } else {
        t->add_dims(interesting_int(rng));
      }
      break;
    case 1:
      t->add_dims(interesting_int(rng));
      break;
    case 2: {  // raw data shorter or longer than the dims say
      std::string* raw = t->mutable_raw_data();
      if (!raw->empty() && rng() % 2 == 0) {
        raw->resize(pick(rng, raw->size()));
      } else {
        raw->append(1 + pick(rng, 64), '\x01');
      }
      break;
    }
    case 3:
      t->set_data_type(static_cast<int>(rng() % 18));
      break;
    case 4: {  // values in a file that is not there
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      t->clear_external_data();
      auto* e = t->add_external_data();
      e->set_key("location");
      e->set_value(rng() % 2 ? "missing.bin" : "../fuzz.onnx");
      break;
    }
    default:
      t->clear_raw_data();
      t->clear_float_data();
      t->clear_int64_data();
      t->clear_int32_data();
      break;
  }
}

void mutate_attribute(onnx::AttributeProto* a, Rng& rng) {
  if (a->ints_size() > 0) {
    switch (rng() % 3) {
      case 0:
        a->set_ints(static_cast<int>(pick(rng, a->ints_size())), interesting_int(rng));
        break;
      case 1:
        a->add_ints(interesting_int(rng));
        break;
      default:
        a->mutable_ints()->RemoveLast();
        break;
    }
  } else if (a->has_i()) {
    a->set_i(interesting_int(rng));
  } else if (a->has_f()) {
    static const float kFloats[] = {0.0f, -1.0f, 1e30f, -1e-30f, 3.5f};
    a->set_f(kFloats[pick(rng, 5)]);
  } else if (a->has_t()) {
    mutate_tensor(a->mutable_t(), rng);
  } else {
    a->set_i(interesting_int(rng));
  }
}

// Every tensor name the graph mentions, for rewiring node inputs.
std::vector<std::string> tensor_names(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& v : g.input()) names.push_back(v.name());
  for (const auto& t : g.initializer()) names.push_back(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) names.push_back(o);
  }
  return names;
}

void mutate_node(onnx::GraphProto* g, Rng& rng) {
  if (g->node_size() == 0) return;
  auto* node = g->mutable_node(static_cast<int>(pick(rng, g->node_size())));
  static const char* kOps[] = {"Conv",
                               "MatMul",
                               "Gemm",
                               "Relu",
                               "MaxPool",
                               "Reshape",
                               "Concat",
                               "Add",
                               "Softmax",
                               "Transpose",
                               "Slice",
                               "Gather",
                               "Resize",
                               "Pad",
                               "Split",
                               "Expand",
                               "Squeeze",
                               "GlobalAveragePool",
                               "Shape",
                               "Range",
                               "ConstantOfShape",
                               "Unsqueeze",
                               "BatchNormalization",
                               "Flatten"};
  switch (rng() % 6) {
    case 0: {
      const std::vector<std::string> names = tensor_names(*g);
      if (node->input_size() > 0 && !names.empty()) {
        node->set_input(static_cast<int>(pick(rng, node->input_size())),
                        rng() % 8 == 0 ? std::string() : names[pick(rng, names.size())]);
      }
      break;
    }
    case 1:
      node->set_op_type(kOps[pick(rng, sizeof(kOps) / sizeof(kOps[0]))]);
      break;
    case 2:
      if (node->attribute_size() > 0) {
        mutate_attribute(
            node->mutable_attribute(static_cast<int>(pick(rng, node->attribute_size()))), rng);
      } else {
        auto* a = node->add_attribute();
        static const char* kNames[] = {"axis", "group", "kernel_shape", "strides", "pads"};
        a->set_name(kNames[pick(rng, 5)]);
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(interesting_int(rng));
      }
      break;
    case 3:
      if (node->input_size() > 0 && rng() % 2 == 0) {
        node->mutable_input()->RemoveLast();
      } else {
        const std::vector<std::string> names = tensor_names(*g);
        if (!names.empty()) node->add_input(names[pick(rng, names.size())]);
      }
      break;
    case 4:  // drop a node: its outputs are never produced
      g->mutable_node()->DeleteSubrange(static_cast<int>(pick(rng, g->node_size())), 1);
      break;
    default:  // duplicate a node: two producers of one tensor
      *g->add_node() = g->node(static_cast<int>(pick(rng, g->node_size())));
      break;
  }
}

void mutate_model(onnx::ModelProto& m, Rng& rng) {
  auto* g = m.mutable_graph();
  switch (rng() % 8) {
    case 0: {
      static const std::int64_t kOpsets[] = {1,  6,  7,  9,  10,  11, 12, 13,
                                             17, 18, 21, 22, 999, 0,  -1};
      if (m.opset_import_size() == 0) m.add_opset_import();
      m.mutable_opset_import(0)->set_version(kOpsets[pick(rng, 15)]);
      break;
    }
    case 1: {
      static const std::int64_t kIr[] = {0, 1, 3, 4, 7, 8, 9, 10, 11, 999, -1};
      m.set_ir_version(kIr[pick(rng, 11)]);
      break;
    }
    case 2:
      if (g->input_size() > 0)
        mutate_value_info(g->mutable_input(static_cast<int>(pick(rng, g->input_size()))), rng);
      break;
    case 3:
      if (g->output_size() > 0) {
        if (rng() % 3 == 0) {
          g->mutable_output(static_cast<int>(pick(rng, g->output_size())))->set_name("nowhere");
        } else {
          mutate_value_info(g->mutable_output(static_cast<int>(pick(rng, g->output_size()))), rng);
        }
      }
      break;
    case 4:
      if (g->initializer_size() > 0)
        mutate_tensor(g->mutable_initializer(static_cast<int>(pick(rng, g->initializer_size()))),
                      rng);
      break;
    default:
      mutate_node(g, rng);
      break;
  }
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  Rng rng(seed == 0 ? 1 : seed);
  onnx::ModelProto model;
  // One input in eight, or one that does not parse: byte-level, so the parser stays covered too.
  if (rng() % 8 == 0 || !model.ParseFromArray(data, static_cast<int>(size))) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  const int rounds = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < rounds; ++i) mutate_model(model, rng);
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > max_size) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}
