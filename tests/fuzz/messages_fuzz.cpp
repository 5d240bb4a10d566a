// libFuzzer target for the control messages a stranger can write into a
// multi-node job's store: the rendezvous' join (AgentInfo), round or outcome
// (Next), node report and round end (rendezvous/messages.hpp), the gang
// doctor's request and answer (doctor/node_requests.hpp), and the MAC around
// each (rendezvous/signing.hpp). The first input byte picks the reader; the
// rest is the stored text. Whatever a reader accepts must be printable where
// it reaches a terminal, read back unchanged from its own JSON, and (for the
// MAC) be exactly what sealing its message gives. Any broken invariant traps.
#include "doctor/node_requests.hpp"
#include "rendezvous/messages.hpp"
#include "rendezvous/signing.hpp"
#include "util/strings.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace {

using namespace gangrun;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool printable(std::string_view text) { return strings::printable(text) == text; }

template <typename T, typename Read>
void round_trip(const T& value, Read read) {
  auto again = read(to_json(value));
  check(again.has_value());
  check(to_json(*again) == to_json(value));
}

void agent_info(const std::string& text) {
  auto info = rendezvous::agent_info_from_json(text);
  if (!info) return;
  check(printable(info->id) && printable(info->host) && printable(info->address) &&
        printable(info->run_id));
  check(info->node_rank >= -1 && info->node_rank < rendezvous::k_max_ranks);
  check(info->local_world_size >= 1 &&
        info->local_world_size <= rendezvous::k_max_local_world_size);
  round_trip(*info, rendezvous::agent_info_from_json);
}

void next(const std::string& text) {
  auto next = rendezvous::next_from_json(text);
  if (!next) return;
  if (const auto* outcome = std::get_if<rendezvous::JobOutcome>(&*next)) {
    check(outcome->exit_code >= 0 && outcome->exit_code <= 255);
    check(printable(outcome->message) && printable(outcome->root_agent));
    if (outcome->stop_signal) check(*outcome->stop_signal >= 1 && *outcome->stop_signal <= 64);
  } else {
    const auto& plan = std::get<rendezvous::RoundPlan>(*next);
    check(plan.world_size <= rendezvous::k_max_ranks);
    int offset = 0;
    for (const rendezvous::Member& member : plan.members) {
      check(printable(member.id) && printable(member.host));
      check(member.rank_offset == offset);
      offset += member.local_world_size;
    }
    check(offset == plan.world_size);
  }
  round_trip(*next, rendezvous::next_from_json);
}

void node_report(const std::string& text) {
  auto report = rendezvous::node_report_from_json(text);
  if (!report) return;
  check(printable(report->agent) && printable(report->host) && printable(report->what));
  check(report->exit_code >= 0 && report->exit_code <= 255);
  if (report->succeeded) check(!report->rank && !report->stop_signal);
  round_trip(*report, rendezvous::node_report_from_json);
}

void round_end(const std::string& text) {
  auto end = rendezvous::round_end_from_json(text);
  if (!end) return;
  check(printable(end->message));
  round_trip(*end, rendezvous::round_end_from_json);
}

void doctor_request(const std::string& text) {
  auto request = doctor::node_request_from_json(text);
  if (!request) return;
  check(printable(request->ask_id));
  check(request->silent_for_s >= 0 && request->silent_for_s <= 365.0 * 24 * 3600);
  round_trip(*request, doctor::node_request_from_json);
}

void doctor_answer(const std::string& text) {
  auto answer = doctor::node_answer_from_json(text);
  if (!answer) return;
  for (const doctor::RankStacks& rank : answer->ranks) {
    check(printable(rank.host));
    for (const doctor::ThreadStack& thread : rank.threads) {
      check(printable(thread.name));
      for (const doctor::Frame& frame : thread.frames) {
        check(printable(frame.function) && printable(frame.file));
      }
    }
  }
  round_trip(*answer, doctor::node_answer_from_json);
}

// A value as the store holds it, opened by a job with a secret and one
// without: what a sealed job accepts is exactly its own seal of the message.
void sealed(const std::string& text) {
  static const std::string secret = "a-secret-of-this-job-0123456789";
  rendezvous::Signer job(secret, "job");
  job.bind_to_job("00112233445566778899aabbccddeeff");
  const std::string key = "gangrun/run/rdzv/join/a";
  if (auto message = job.open(key, text)) check(job.seal(key, *message) == text);
  rendezvous::Signer open(std::nullopt, "job");
  check(open.open(key, text).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 0:
      agent_info(text);
      break;
    case 1:
      next(text);
      break;
    case 2:
      node_report(text);
      break;
    case 3:
      round_end(text);
      break;
    case 4:
      doctor_request(text);
      break;
    case 5:
      doctor_answer(text);
      break;
    default:
      sealed(text);
      break;
  }
  return 0;
}
