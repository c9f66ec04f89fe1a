#include "batch_codec.h"

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace seedance::ha {

namespace {

// SDB1: nodes, pods, events, revision, policy. SDB2: the same, then the objects. A batch without
// objects is written as SDB1, which every seedance with the etcd store reads.
constexpr std::string_view kMagic1 = "SDB1";
constexpr std::string_view kMagic2 = "SDB2";

class Writer {
 public:
  void U64(uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_.append(b, 8);
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Str(std::string_view s) {
    U64(s.size());
    out_.append(s);
  }
  void Raw(std::string_view s) { out_.append(s); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U64(uint64_t* v) {
    if (in_.size() < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i)
      *v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t u = 0;
    if (!U64(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool Str(std::string* s) {
    uint64_t n = 0;
    if (!U64(&n) || n > in_.size()) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  // A count of items, each at least `min_bytes` long: refuses counts the input cannot hold.
  bool Count(uint64_t* n, size_t min_bytes) { return U64(n) && *n <= in_.size() / min_bytes; }
  bool Prefix(std::string_view p) {
    if (in_.substr(0, p.size()) != p) return false;
    in_.remove_prefix(p.size());
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

bool ReadNode(Reader& r, store::NodeRecord* n) {
  int64_t cordoned = 0;
  return r.Str(&n->name) && r.Str(&n->spec_json) && r.I64(&cordoned) && r.I64(&n->revision) &&
         ((n->cordoned = cordoned != 0), true);
}

bool ReadPod(Reader& r, store::PodRecord* p) {
  return r.Str(&p->uid) && r.Str(&p->ns) && r.Str(&p->name) && r.Str(&p->spec_json) &&
         r.Str(&p->phase) && r.Str(&p->node) && r.Str(&p->gpus_json) && r.I64(&p->revision);
}

bool ReadObjects(Reader& r, store::Batch* b) {
  uint64_t n = 0;
  if (!r.Count(&n, 32)) return false;
  b->put_objects.resize(n);
  for (store::ObjectRecord& o : b->put_objects) {
    if (!r.Str(&o.kind) || !r.Str(&o.key) || !r.Str(&o.json) || !r.I64(&o.revision)) return false;
  }
  for (auto* pairs : {&b->delete_objects, &b->delete_object_prefixes}) {
    if (!r.Count(&n, 16)) return false;
    pairs->resize(n);
    for (auto& [kind, key] : *pairs) {
      if (!r.Str(&kind) || !r.Str(&key)) return false;
    }
  }
  return true;
}

bool ReadAll(Reader& r, store::Batch* b) {
  uint64_t n = 0;
  const bool objects = r.Prefix(kMagic2);
  if ((!objects && !r.Prefix(kMagic1)) || !r.Count(&n, 32)) return false;
  b->put_nodes.resize(n);
  for (store::NodeRecord& x : b->put_nodes) {
    if (!ReadNode(r, &x)) return false;
  }
  if (!r.Count(&n, 8)) return false;
  b->delete_nodes.resize(n);
  for (std::string& x : b->delete_nodes) {
    if (!r.Str(&x)) return false;
  }
  if (!r.Count(&n, 64)) return false;
  b->put_pods.resize(n);
  for (store::PodRecord& x : b->put_pods) {
    if (!ReadPod(r, &x)) return false;
  }
  if (!r.Count(&n, 8)) return false;
  b->delete_pods.resize(n);
  for (std::string& x : b->delete_pods) {
    if (!r.Str(&x)) return false;
  }
  if (!r.Count(&n, 24)) return false;
  b->events.resize(n);
  for (store::EventRecord& e : b->events) {
    if (!r.I64(&e.revision) || !r.Str(&e.type) || !r.Str(&e.object_json)) return false;
  }
  int64_t has_policy = 0;
  if (!r.I64(&b->revision) || !r.I64(&has_policy)) return false;
  if (has_policy != 0) {
    std::string text;
    if (!r.Str(&text)) return false;
    b->policy_text = std::move(text);
  }
  if (objects && !ReadObjects(r, b)) return false;
  return r.done();
}

}  // namespace

std::string EncodeBatch(const store::Batch& b) {
  Writer w;
  const bool objects =
      !b.put_objects.empty() || !b.delete_objects.empty() || !b.delete_object_prefixes.empty();
  w.Raw(objects ? kMagic2 : kMagic1);
  w.U64(b.put_nodes.size());
  for (const store::NodeRecord& n : b.put_nodes) {
    w.Str(n.name);
    w.Str(n.spec_json);
    w.I64(n.cordoned ? 1 : 0);
    w.I64(n.revision);
  }
  w.U64(b.delete_nodes.size());
  for (const std::string& n : b.delete_nodes) w.Str(n);
  w.U64(b.put_pods.size());
  for (const store::PodRecord& p : b.put_pods) {
    for (const std::string* s :
         {&p.uid, &p.ns, &p.name, &p.spec_json, &p.phase, &p.node, &p.gpus_json}) {
      w.Str(*s);
    }
    w.I64(p.revision);
  }
  w.U64(b.delete_pods.size());
  for (const std::string& p : b.delete_pods) w.Str(p);
  w.U64(b.events.size());
  for (const store::EventRecord& e : b.events) {
    w.I64(e.revision);
    w.Str(e.type);
    w.Str(e.object_json);
  }
  w.I64(b.revision);
  w.I64(b.policy_text.has_value() ? 1 : 0);
  if (b.policy_text) w.Str(*b.policy_text);
  if (objects) {
    w.U64(b.put_objects.size());
    for (const store::ObjectRecord& o : b.put_objects) {
      w.Str(o.kind);
      w.Str(o.key);
      w.Str(o.json);
      w.I64(o.revision);
    }
    for (const auto* pairs : {&b.delete_objects, &b.delete_object_prefixes}) {
      w.U64(pairs->size());
      for (const auto& [kind, key] : *pairs) {
        w.Str(kind);
        w.Str(key);
      }
    }
  }
  return w.Take();
}

absl::StatusOr<store::Batch> DecodeBatch(std::string_view bytes) {
  store::Batch b;
  Reader r(bytes);
  if (!ReadAll(r, &b)) {
    return absl::DataLossError(
        absl::StrCat("a stored batch of ", bytes.size(), " bytes cannot be decoded"));
  }
  return b;
}

}  // namespace seedance::ha
