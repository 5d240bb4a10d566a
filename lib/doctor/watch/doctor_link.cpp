#include "doctor/watch/doctor_link.hpp"

#include "rendezvous/keys.hpp"
#include "rendezvous/participant.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace gangrun::doctor {

namespace {

// How long one wait for the next request lasts before it is made again: the
// bound on how late a finished round's wait lets the next round's begin.
constexpr std::chrono::milliseconds k_request_wait{2000};
constexpr std::chrono::milliseconds k_retry{200};
constexpr std::chrono::milliseconds k_short{10000};  // a write or a read
// Keys one MULTI_GET reads: a reply of that many nodes' answers stays a few
// megabytes, far below the store's max_reply_bytes.
constexpr std::size_t k_keys_per_read = 256;

}  // namespace

DoctorLink::DoctorLink(boost::asio::io_context& io, Settings settings, RequestHandler on_request)
    : settings_(std::move(settings)),
      on_request_(std::move(on_request)),
      signer_(settings_.secret, settings_.run_id),
      answers_(settings_.secret
                   ? std::optional<std::string>(rendezvous::derived_key(
                         *settings_.secret, rendezvous::k_stacks_purpose, settings_.run_id))
                   : std::nullopt,
               settings_.run_id),
      writes_(io, settings_.store),
      waits_(io, settings_.store),
      retry_(io) {}

void DoctorLink::round_started(std::uint64_t round, std::vector<std::string> members,
                               const std::string& job_nonce) {
  signer_.bind_to_job(job_nonce);
  answers_.bind_to_job(job_nonce);
  if (!waits_claimed_) {
    // Protected from now on, like the participant's connections.
    waits_claimed_ = true;
    rendezvous::claim_connection(waits_, signer_, settings_.agent_id);
  }
  round_ = round;
  members_ = std::move(members);
  next_request_ = 1;
  silence_in_flight_ = false;
  last_silence_told_.clear();
  wait_for_request(++generation_);
}

void DoctorLink::round_ended() {
  round_.reset();
  ++generation_;
  retry_.cancel();
}

void DoctorLink::wait_for_request(std::uint64_t generation) {
  if (generation != generation_ || !round_) return;
  std::string key = rendezvous::keys::doctor_request(*round_, next_request_);
  waits_.wait(
      {key},
      [this, generation, key](const Expected<void>& waited) {
        if (generation != generation_) return;
        if (!waited) return wait_for_request(generation);  // timed out: nothing asked yet
        waits_.get(
            key,
            [this, generation, key](Expected<std::string> value) {
              if (generation != generation_) return;
              if (!value) return wait_again_later(generation);
              std::int64_t number = next_request_++;
              auto message = signer_.open(key, *value);
              auto request = message
                                 ? doctor::node_request_from_json(*message)
                                 : Expected<doctor::NodeRequest>(tl::unexpected(message.error()));
              if (!request) {
                spdlog::warn("gang doctor: ignored request {}: {}", number,
                             request.error().describe());
              } else {
                on_request_(number, *request);
              }
              wait_for_request(generation);
            },
            k_short);
      },
      k_request_wait);
}

void DoctorLink::wait_again_later(std::uint64_t generation) {
  retry_.expires_after(k_retry);
  retry_.async_wait([this, generation](const boost::system::error_code& error) {
    if (!error) wait_for_request(generation);
  });
}

void DoctorLink::publish_silence(std::chrono::milliseconds silent_for) {
  // A store that answers slowly gets the latest silence, not a queue of them.
  if (!round_ || silence_in_flight_) return;
  silence_in_flight_ = true;
  std::string key = doctor::node_keys::silence(*round_, settings_.agent_id);
  writer().set(
      key, signer_.seal(key, fmt::format("{} {}", ++silences_told_, silent_for.count())),
      [](const Expected<void>&) {}, k_short);
  writer().check(
      {key}, [this](const Expected<bool>&) { silence_in_flight_ = false; }, k_short);
}

// "<count> <ms>": a node's count of the silences it told goes up, so one
// written again later (a replay) says nothing.
std::optional<std::chrono::milliseconds> DoctorLink::believed_silence(const std::string& agent,
                                                                      const std::string& text) {
  std::size_t space = text.find(' ');
  if (space == std::string::npos) return std::nullopt;
  auto count = strings::parse_int(text.substr(0, space));
  auto ms = strings::parse_int(text.substr(space + 1));
  if (!count || !ms || *ms < 0 || *count <= 0) return std::nullopt;
  std::int64_t& last = last_silence_told_[agent];
  if (*count < last) return std::nullopt;
  last = *count;
  return std::chrono::milliseconds(*ms);
}

// Made only when first used (a job without --hang-timeout that nobody asks
// for stacks never opens it), and then protected at once.
store::AsyncClient& DoctorLink::writer() {
  if (!writes_claimed_) {
    writes_claimed_ = true;
    rendezvous::claim_connection(writes_, signer_, settings_.agent_id);
  }
  return writes_;
}

std::vector<std::string> DoctorLink::others() const {
  std::vector<std::string> ids;
  for (const std::string& id : members_) {
    if (id != settings_.agent_id) ids.push_back(id);
  }
  return ids;
}

void DoctorLink::read_existing(const rendezvous::Signer& signer,
                               const std::shared_ptr<std::vector<std::string>>& keys,
                               const std::shared_ptr<std::map<std::string, std::string>>& found,
                               const std::function<void()>& done) {
  if (keys->empty()) return done();
  writer().check(
      *keys,
      [this, &signer, keys, found, done](Expected<bool> all_there) {
        if (all_there && *all_there) return read_batches(signer, keys, 0, found, done);
        read_one_by_one(signer, keys, 0, found, done);
      },
      k_short);
}

void DoctorLink::read_batches(const rendezvous::Signer& signer,
                              const std::shared_ptr<std::vector<std::string>>& keys,
                              std::size_t first,
                              const std::shared_ptr<std::map<std::string, std::string>>& found,
                              const std::function<void()>& done) {
  if (first >= keys->size()) return done();
  std::size_t end = std::min(keys->size(), first + k_keys_per_read);
  std::vector<std::string> batch(keys->begin() + static_cast<std::ptrdiff_t>(first),
                                 keys->begin() + static_cast<std::ptrdiff_t>(end));
  writer().multi_get(
      std::move(batch),
      [this, &signer, keys, first, end, found, done](Expected<std::vector<std::string>> values) {
        if (!values) return read_one_by_one(signer, keys, first, found, done);
        for (std::size_t i = first; i < end && i - first < values->size(); ++i) {
          const std::string& value = (*values)[i - first];
          if (value.empty()) continue;  // deleted since the CHECK
          auto message = signer.open((*keys)[i], value);
          if (message) (*found)[(*keys)[i]] = std::move(*message);
        }
        read_batches(signer, keys, end, found, done);
      },
      k_short);
}

void DoctorLink::read_one_by_one(const rendezvous::Signer& signer,
                                 const std::shared_ptr<std::vector<std::string>>& keys,
                                 std::size_t i,
                                 const std::shared_ptr<std::map<std::string, std::string>>& found,
                                 const std::function<void()>& done) {
  if (i == keys->size()) return done();
  const std::string key = (*keys)[i];
  writer().check(
      {key},
      [this, &signer, keys, i, found, done, key](Expected<bool> exists) {
        if (!exists || !*exists) return read_one_by_one(signer, keys, i + 1, found, done);
        writer().get(
            key,
            [this, &signer, keys, i, found, done, key](Expected<std::string> value) {
              if (value) {
                auto message = signer.open(key, *value);
                if (message) (*found)[key] = std::move(*message);
              }
              read_one_by_one(signer, keys, i + 1, found, done);
            },
            k_short);
      },
      k_short);
}

void DoctorLink::read_silences(std::function<void(ByAgent<std::chrono::milliseconds>)> done) {
  // A read that takes longer than a tick (a slow store) is not joined by the
  // next: the next tick reads again once it is done.
  if (!round_ || silences_read_in_flight_) return;
  silences_read_in_flight_ = true;
  auto keys = std::make_shared<std::vector<std::string>>();
  // Shared, not copied: the reading copies its closing step once per key read
  // (read_one_by_one), and a copy of N ids each time cost N² at thousands of nodes.
  auto ids = std::make_shared<const std::vector<std::string>>(others());
  for (const std::string& id : *ids) keys->push_back(doctor::node_keys::silence(*round_, id));
  auto found = std::make_shared<std::map<std::string, std::string>>();
  auto then =
      std::make_shared<std::function<void(ByAgent<std::chrono::milliseconds>)>>(std::move(done));
  read_existing(signer_, keys, found, [this, keys, ids, found, then] {
    silences_read_in_flight_ = false;
    ByAgent<std::chrono::milliseconds> silences;
    for (std::size_t i = 0; i < ids->size(); ++i) {
      const std::string& id = (*ids)[i];
      auto value = found->find((*keys)[i]);
      silences[id] = value == found->end() ? std::nullopt : believed_silence(id, value->second);
    }
    (*then)(std::move(silences));
  });
}

std::string DoctorLink::ask(doctor::NodeRequest request) {
  if (!round_) return "";
  request.ask_id = rendezvous::new_job_nonce();
  std::string key = rendezvous::keys::doctor_ask(*round_, request.ask_id);
  writer().set(
      key, signer_.seal(key, doctor::to_json(request)),
      [](const Expected<void>& written) {
        if (!written) {
          spdlog::warn("gang doctor: could not ask the other nodes: {}",
                       written.error().describe());
        }
      },
      k_short);
  return request.ask_id;
}

void DoctorLink::answer(std::int64_t number, const doctor::NodeAnswer& answer) {
  if (!round_) return;
  std::string key = doctor::node_keys::answer(*round_, number, settings_.agent_id);
  writer().set(
      key, answers_.seal(key, doctor::to_json(answer)), [](const Expected<void>&) {}, k_short);
  forget_answers_before(number);
}

void DoctorLink::answer_status(std::int64_t number, const std::string& status_json) {
  if (!round_) return;
  std::string key = doctor::node_keys::status(*round_, number, settings_.agent_id);
  writer().set(
      key, answers_.seal(key, status_json), [](const Expected<void>&) {}, k_short);
  forget_answers_before(number);
}

void DoctorLink::forget_answers_before(std::int64_t number) {
  // This node's answer (of either kind) to the request the coordinator
  // forgets now (rendezvous/keys.hpp: k_doctor_requests_kept).
  std::int64_t old = number - rendezvous::keys::k_doctor_requests_kept;
  if (old < 1) return;
  for (const std::string& key : {doctor::node_keys::answer(*round_, old, settings_.agent_id),
                                 doctor::node_keys::status(*round_, old, settings_.agent_id)}) {
    writer().delete_key(
        key, [](const Expected<bool>&) {}, k_short);
  }
}

void DoctorLink::collect(std::int64_t number, std::chrono::milliseconds limit,
                         std::function<void(ByAgent<doctor::NodeAnswer>)> done) {
  if (!round_) return;
  auto keys = std::make_shared<std::vector<std::string>>();
  for (const std::string& id : members_) {
    keys->push_back(doctor::node_keys::answer(*round_, number, id));
  }
  // All of them, or what has come when the limit is reached.
  writer().wait(
      *keys,
      [this, keys, then = std::make_shared<decltype(done)>(std::move(done)),
       members =
           std::make_shared<const std::vector<std::string>>(members_)](const Expected<void>&) {
        auto found = std::make_shared<std::map<std::string, std::string>>();
        // Shared, as read_silences' are.
        read_existing(answers_, keys, found, [keys, found, members, then] {
          ByAgent<doctor::NodeAnswer> answers;
          for (std::size_t i = 0; i < members->size(); ++i) {
            auto value = found->find((*keys)[i]);
            std::optional<doctor::NodeAnswer> answer;
            if (value != found->end()) {
              auto parsed = doctor::node_answer_from_json(value->second);
              if (parsed) {
                answer = std::move(*parsed);
              } else {
                spdlog::warn("gang doctor: {}", parsed.error().describe());
              }
            }
            answers[(*members)[i]] = std::move(answer);
          }
          (*then)(std::move(answers));
        });
      },
      limit);
}

}  // namespace gangrun::doctor
