// The gang doctor's traffic between the nodes of a multi-node job, through
// the job's store (doctor/node_requests.hpp names the keys): each node's
// silence for the lead, the requests to read every rank's stack, and the
// nodes' answers. Nothing new listens: two more connections to the store
// the agents already meet at, like the participant's (rendezvous/
// participant.hpp): one for writes and short reads, one that waits for the
// next request. The store being lost is the participant's to notice: here a
// failed operation is logged and tried again later.
#pragma once

#include "doctor/node_requests.hpp"
#include "rendezvous/signing.hpp"
#include "store/async_client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gangrun::doctor {

class DoctorLink {
 public:
  struct Settings {
    store::ClientSettings store;
    std::optional<std::string> secret;  // the job's; nullopt: values are not sealed
    std::string run_id;
    std::string agent_id;  // this agent's, as the round names it
  };
  // A request of the running round, numbered.
  using RequestHandler = std::function<void(std::int64_t number, const doctor::NodeRequest&)>;
  // Agent id -> what it wrote (nullopt: nothing yet, or not believed).
  template <typename T>
  using ByAgent = std::map<std::string, std::optional<T>>;

  DoctorLink(boost::asio::io_context& io, Settings settings, RequestHandler on_request);

  // Round `round` began with these agents (this one among them): its
  // requests are waited for from now on. job_nonce: what the job's messages
  // are sealed for (rendezvous/signing.hpp).
  void round_started(std::uint64_t round, std::vector<std::string> members,
                     const std::string& job_nonce);
  void round_ended();

  // For the lead: how long this node's ranks have been silent.
  void publish_silence(std::chrono::milliseconds silent_for);
  // The lead: every other member's latest silence.
  void read_silences(std::function<void(ByAgent<std::chrono::milliseconds>)> done);

  // Asks every node of the round, this one too (through its own wait): the
  // coordinator numbers the ask and publishes it as a request. Returns the
  // ask's id, which the request carries (NodeRequest::ask_id).
  std::string ask(doctor::NodeRequest request);
  void answer(std::int64_t number, const doctor::NodeAnswer& answer);
  // A status request's answer: this node's snapshot as JSON (`gangrun top`).
  void answer_status(std::int64_t number, const std::string& status_json);
  // Every member's answer to request `number`, once all are in or `limit`
  // has passed.
  void collect(std::int64_t number, std::chrono::milliseconds limit,
               std::function<void(ByAgent<doctor::NodeAnswer>)> done);
  // The round's other members.
  std::vector<std::string> others() const;

 private:
  // Deletes this node's answer to the request k_doctor_requests_kept before
  // `number` (rendezvous/keys.hpp), so that answers do not pile up.
  void forget_answers_before(std::int64_t number);
  store::AsyncClient& writer();
  void wait_for_request(std::uint64_t generation);
  // A silence as stored, if it is believed: well formed and not older than
  // the last one read from that agent.
  std::optional<std::chrono::milliseconds> believed_silence(const std::string& agent,
                                                            const std::string& text);
  void wait_again_later(std::uint64_t generation);
  // Reads those of keys that exist into found, each opened with signer: one
  // CHECK of them all and, when every one exists (a round's silences after its
  // first tick, the answers a WAIT saw come), MULTI_GETs of a few hundred keys
  // each, so that thousands of nodes cost a few round trips, not two a node.
  // When some are missing, one key after another (a CHECK and a GET each): a
  // PyTorch server before the libuv one drops a connection whose MULTI_GET
  // names a missing key.
  void read_existing(const rendezvous::Signer& signer,
                     const std::shared_ptr<std::vector<std::string>>& keys,
                     const std::shared_ptr<std::map<std::string, std::string>>& found,
                     const std::function<void()>& done);
  void read_batches(const rendezvous::Signer& signer,
                    const std::shared_ptr<std::vector<std::string>>& keys, std::size_t first,
                    const std::shared_ptr<std::map<std::string, std::string>>& found,
                    const std::function<void()>& done);
  void read_one_by_one(const rendezvous::Signer& signer,
                       const std::shared_ptr<std::vector<std::string>>& keys, std::size_t i,
                       const std::shared_ptr<std::map<std::string, std::string>>& found,
                       const std::function<void()>& done);

  Settings settings_;
  RequestHandler on_request_;
  rendezvous::Signer signer_;   // the job's secret: silences and asks
  rendezvous::Signer answers_;  // the stacks key derived from it: answers
  store::AsyncClient writes_;
  store::AsyncClient waits_;
  boost::asio::steady_timer retry_;
  std::optional<std::uint64_t> round_;
  std::vector<std::string> members_;
  std::int64_t next_request_ = 1;
  std::uint64_t generation_ = 0;
  // Each connection claims itself as the agent's (rendezvous::claim_connection)
  // before its first use.
  bool waits_claimed_ = false;
  bool writes_claimed_ = false;
  std::int64_t silences_told_ = 0;  // this node's, to the lead
  std::map<std::string, std::int64_t>
      last_silence_told_;  // the lead's view, per round  // one request loop
                           // per round: an older loop stops
  bool silence_in_flight_ = false;
  bool silences_read_in_flight_ = false;  // the lead's
};

}  // namespace gangrun::doctor
