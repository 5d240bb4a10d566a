#include "agent/round_record.hpp"

#include "agent/attempt_record.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gangrun::agent {

void complete_last_attempt(const launch::LaunchPlan& plan, report::RunRecord& record,
                           InterpreterProbe& probe, const FindingsReader& read_findings,
                           std::function<void()> done) {
  std::size_t at = record.attempts.size() - 1;
  read_findings([&plan, &record, &probe, at, done = std::move(done)](report::DoctorFindings found) {
    report::AttemptRecord& attempt = record.attempts.at(at);
    attempt.doctor = std::move(found);
    std::vector<std::string> packages = packages_to_probe(plan, attempt);
    if (packages.empty()) return done();
    probe.start(plan.program.interpreter->path, plan.host_env, std::move(packages),
                [&record, at, done](std::optional<std::string> unimportable) {
                  report::AttemptRecord& probed = record.attempts.at(at);
                  if (unimportable) {
                    probed.workers.at(*probed.first_failure).unimportable_module =
                        std::move(*unimportable);
                  }
                  done();
                });
  });
}

}  // namespace gangrun::agent
