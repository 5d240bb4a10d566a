// The job secret and what it proves. Every control message of a multi-node
// run (an agent's join, heartbeat, failure and result; the coordinator's
// welcome, round and end) is stored as
//
//   <64 hex digits of HMAC-SHA-256>:<message>
//
// where the MAC covers the run id, the store key and the message, so a
// message cannot be replayed under another key, round, agent or job. The MAC
// is libsodium's (crypto_auth_hmacsha256, compared in constant time): a
// maintained Debian library that is small enough to link statically, which
// OpenSSL's libcrypto is not.
//
// Without a secret, messages are stored as they are and open() takes them
// as they are: the control plane is open to whoever reaches the store
// (the agent warns once; docs/securing-multi-node.md says how to close it).
#pragma once

#include "util/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace gangrun::rendezvous {

class Signer {
 public:
  // secret: the job's secret, shared by every agent of the job; nullopt or
  // empty: messages are not authenticated.
  Signer(std::optional<std::string> secret, std::string run_id);

  bool authenticated() const { return !secret_.empty(); }

  // The value to store under key for message.
  std::string seal(std::string_view key, std::string_view message) const;

  // The message a stored value carries. Fails with ErrorCode::store when
  // this signer is authenticated and the value has no MAC, or a MAC that
  // this job's secret did not make for this key. Unauthenticated, a sealed
  // value's MAC is dropped unchecked (the other side has a secret this one
  // lacks: what follows fails elsewhere with a clearer message).
  Expected<std::string> open(std::string_view key, std::string_view value) const;

 private:
  std::string mac_hex(std::string_view key, std::string_view message) const;

  std::string secret_;
  std::string run_id_;
};

// 32 random bytes from the kernel as 64 hex digits: the secret gangrun
// makes when it starts the other nodes itself (srun, ssh).
std::string new_job_secret();

}  // namespace gangrun::rendezvous
