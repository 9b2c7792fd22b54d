// A node's checkpoint parts; see node_parts.hpp.
#include "cluster/node_parts.hpp"

namespace herd::cluster {

actors::part_record write_part(const part_store& store, const std::string& stem,
                               const std::string& keep_from, int node,
                               const std::vector<actors::worker_record>& workers) {
  if (store.directory.empty())
    throw std::runtime_error("this node has no checkpoint directory");
  checkpoint::header head;
  head.herd_version = store.herd_version;
  head.shape = store.shape;
  head.fingerprint = store.shape.fingerprint();
  head.written_unix_ms = checkpoint::unix_milliseconds();
  const std::string payload = actors::encode_part(workers);
  const std::string bytes = checkpoint::encode(head, payload);
  actors::part_record part;
  part.node = node;
  for (const auto& worker : workers)
    part.workers.push_back(worker.index);
  part.file = checkpoint::part_name(stem, node);
  checkpoint::write_atomically(store.directory, part.file, bytes);
  part.bytes = bytes.size();
  part.payload_hash = checkpoint::fnv1a64(payload); // as encode() put it in the header
  checkpoint::prune_parts(store.directory, keep_from, stem);
  return part;
}

} // namespace herd::cluster
