// The lead's reading of every node's silence through a real store on
// loopback (doctor_link.hpp): all of them, in MULTI_GETs of a few hundred
// when every node has told one, one key after another when some have not,
// and a value the job's secret did not seal is believed in neither.
#include "doctor/node_requests.hpp"
#include "doctor/watch/doctor_link.hpp"
#include "expected_checks.hpp"
#include "rendezvous/signing.hpp"
#include "store/client.hpp"
#include "store/server.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using gangrun::doctor::DoctorLink;
using gangrun::rendezvous::Signer;
using gangrun::testing::value_of;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::seconds k_event_limit{30};
const std::string k_secret = "doctor-link-test-secret-0123456789";
const std::string k_run = "run-1";
const std::string k_nonce = "nonce-1";
constexpr std::uint64_t k_round = 3;
// More than one MULTI_GET's worth (256), so that the batches meet.
constexpr int k_others = 300;

std::string other(int i) { return fmt::format("node{}", i); }

class LeadOfManyNodes {
 public:
  LeadOfManyNodes() {
    gangrun::store::ServerSettings settings;
    settings.port = 0;
    settings.raise_open_file_limit = false;
    server_ = value_of(gangrun::store::Server::start(io, settings));
    store_settings_.port = server_->port();
    store_settings_.connect_timeout = 5000ms;
    store_settings_.timeout = 5000ms;
    lead_ = std::make_unique<DoctorLink>(
        io,
        DoctorLink::Settings{
            .store = store_settings_, .secret = k_secret, .run_id = k_run, .agent_id = "lead"},
        [](std::int64_t, const gangrun::doctor::NodeRequest&) {});
    std::vector<std::string> members = {"lead"};
    for (int i = 0; i < k_others; ++i) members.push_back(other(i));
    lead_->round_started(k_round, members, k_nonce);
  }

  // What node i tells: "<count> <ms>", sealed as its own link seals it
  // (with secret: the job's, or another one for a forgery).
  // Catch's checks belong to the test's own thread: a failed write is
  // counted (tell_all) and checked there.
  static bool tell(gangrun::store::Client& client, int i, int ms,
                   const std::string& secret = k_secret) {
    Signer signer(secret, k_run);
    signer.bind_to_job(k_nonce);
    std::string key = gangrun::doctor::node_keys::silence(k_round, other(i));
    return client.set(key, signer.seal(key, fmt::format("1 {}", ms))).has_value();
  }

  // The synchronous client and the server share no thread: the server
  // answers while this loop runs, so the writes go from a thread of their own.
  // writes: how many of its writes failed.
  void tell_all(const std::function<int(gangrun::store::Client&)>& writes) {
    std::atomic<bool> done = false;
    int failed = 0;
    std::thread writer([&] {
      auto client = gangrun::store::Client::connect(store_settings_);
      failed = client ? writes(*client) : -1;
      done = true;
    });
    while (!done) io.run_one_for(10ms);
    writer.join();
    REQUIRE(failed == 0);
  }

  DoctorLink::ByAgent<std::chrono::milliseconds> read() {
    std::optional<DoctorLink::ByAgent<std::chrono::milliseconds>> read;
    lead_->read_silences([&read](DoctorLink::ByAgent<std::chrono::milliseconds> silences) {
      read = std::move(silences);
    });
    while (!read) REQUIRE(io.run_one_for(k_event_limit) > 0);
    return *read;
  }

  boost::asio::io_context io;

 private:
  std::unique_ptr<gangrun::store::Server> server_;
  gangrun::store::ClientSettings store_settings_;
  std::unique_ptr<DoctorLink> lead_;
};

}  // namespace

TEST_CASE("the lead reads every node's silence, in batches when all have told one",
          "[doctor][store]") {
  LeadOfManyNodes lead;
  lead.tell_all([](auto& client) {
    int failed = 0;
    for (int i = 0; i < k_others; ++i) failed += !LeadOfManyNodes::tell(client, i, 1000 + i);
    return failed;
  });
  auto silences = lead.read();
  REQUIRE(silences.size() == static_cast<std::size_t>(k_others));
  for (int i = 0; i < k_others; ++i) {
    INFO(other(i));
    REQUIRE(silences.at(other(i)) == std::chrono::milliseconds(1000 + i));
  }
}

TEST_CASE("a node that has told nothing, or whose silence is forged, is not believed",
          "[doctor][store]") {
  LeadOfManyNodes lead;
  SECTION("one has told nothing: the others are read one by one") {
    lead.tell_all([](auto& client) {
      int failed = 0;
      for (int i = 1; i < k_others; ++i) failed += !LeadOfManyNodes::tell(client, i, 7);
      return failed;
    });
    auto silences = lead.read();
    CHECK_FALSE(silences.at(other(0)).has_value());
    for (int i = 1; i < k_others; ++i) REQUIRE(silences.at(other(i)) == 7ms);
  }
  SECTION("one is sealed with another secret: the batch read believes the rest") {
    lead.tell_all([](auto& client) {
      int failed = !LeadOfManyNodes::tell(client, 0, 7, "some-other-secret-0123456789abcdef");
      for (int i = 1; i < k_others; ++i) failed += !LeadOfManyNodes::tell(client, i, 7);
      return failed;
    });
    auto silences = lead.read();
    CHECK_FALSE(silences.at(other(0)).has_value());
    for (int i = 1; i < k_others; ++i) REQUIRE(silences.at(other(i)) == 7ms);
  }
}
