// The job secret and what it proves. Every control message of a multi-node
// run (an agent's join, heartbeat, failure and result; the coordinator's
// welcome, round and end) is stored as
//
//   <64 hex digits of HMAC-SHA-256>:<message>
//
// where the MAC covers the run id, the job's nonce, the store key and the
// message. The nonce is 128 random bits the coordinator draws when it starts
// and publishes (keys::nonce(), sealed without a nonce, in a key no client
// may write); every agent reads it before it joins and binds its signer to
// it (bind_to_job). So a message cannot be replayed under another key,
// round or agent, nor into another job, even one that shares the secret and
// the run id (a reused secret file, the default --rdzv_id). The MAC
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

  // From now on every MAC also covers nonce: this job's, as the coordinator
  // drew it.
  void bind_to_job(std::string nonce) { nonce_ = std::move(nonce); }
  const std::string& nonce() const { return nonce_; }

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
  std::string nonce_;
};

// Whether value carries a MAC (made with whatever secret).
bool looks_sealed(std::string_view value);

// 32 random bytes from the kernel as 64 hex digits: the secret gangrun
// makes when it starts the other nodes itself (srun, ssh).
std::string new_job_secret();

// 16 random bytes from the kernel as 32 hex digits: a job's nonce.
std::string new_job_nonce();
// Whether text is what new_job_nonce makes (a store that is not this job's
// may answer anything).
bool looks_like_nonce(std::string_view text);

// A key for one purpose derived from the job's secret (HMAC-SHA-256 of the
// purpose and the run id, 64 hex digits): what may be handed to something
// that must not hold the secret itself. `gangrun stacks` gets the one for
// "stacks" through the job registry: with it, it can ask for stacks and read
// the answers, and nothing else.
std::string derived_key(std::string_view secret, std::string_view purpose, std::string_view run_id);
inline constexpr std::string_view k_stacks_purpose = "gangrun stacks";

}  // namespace gangrun::rendezvous
