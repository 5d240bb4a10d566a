// CLI11 only splits the words: every value arrives here as text and is
// checked below, so each message names the option as the user wrote it.
// The client options live on `store` itself and the subcommands fall through
// to it, so they are accepted before or after the subcommand, as etcdctl's
// global flags are.
#include "config/store_cli.hpp"

#include "util/strings.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>

namespace gangrun::config {
namespace {

constexpr int k_default_port = 29500;
constexpr double k_longest_timeout_seconds = 365.0 * 24 * 3600;

tl::unexpected<Error> usage(std::string message) {
  return fail(ErrorCode::usage, std::move(message));
}

struct Subcommand {
  std::string_view name;
  StoreAction action;
  std::string_view help;
};

constexpr std::array k_subcommands = {
    Subcommand{"serve", StoreAction::serve, "Run a store server until SIGINT or SIGTERM"},
    Subcommand{"get", StoreAction::get,
               "Print KEY's value, waiting up to --timeout for KEY to be set"},
    Subcommand{"set", StoreAction::set, "Set KEY to VALUE, or to standard input without VALUE"},
    Subcommand{"add", StoreAction::add,
               "Add DELTA (default 1) to the counter KEY and print its new value"},
    Subcommand{"wait", StoreAction::wait, "Wait up to --timeout until every KEY is set"},
    Subcommand{"check", StoreAction::check, "Exit 0 if every KEY is set, 1 if one is not"},
    Subcommand{"delete", StoreAction::delete_key, "Delete KEY: exit 0 if it was set, 1 if not"},
    Subcommand{"keys", StoreAction::keys, "Print every key, one per line (validated dialect)"},
    Subcommand{"num-keys", StoreAction::num_keys, "Print how many keys the store holds"},
};

constexpr std::string_view k_description =
    "Operate a TCP store that PyTorch's torch.distributed.TCPStore can use: serve one, or "
    "read and write keys of a running one from a shell script.";

constexpr std::string_view k_footer =
    "Keys: like PyTorch's TCPStore client, gangrun puts \"/\" before every key, so 'gangrun "
    "store get foo' reads what Python's store.set(\"foo\", ...) wrote; --raw-keys sends keys "
    "as typed.\n"
    "Endpoint: --endpoint, else GANGRUN_STORE_ENDPOINT, else MASTER_ADDR:MASTER_PORT, else "
    "127.0.0.1:29500.\n"
    "Exit status: 0 done; 1 check found a key missing, or delete found no key; 2 usage "
    "error; 3 the store could not be reached, timed out, or failed.";

constexpr std::string_view k_client_footer =
    "Client options (before or after the command; see gangrun store --help):\n"
    "  --endpoint HOST:PORT, --timeout SECONDS, --dialect validated|legacy, --raw-keys";

// Everything CLI11 collects, as the user typed it.
struct Words {
  std::string endpoint;
  std::string timeout = "300";
  std::string dialect = "validated";
  std::string host = "127.0.0.1";
  std::string port = std::to_string(k_default_port);
  std::string port_file;
  std::string max_key_bytes;
  std::string max_value_bytes;
  std::string max_keys_per_request;
  std::string max_store_bytes;
  std::string max_connections;
  std::string key;
  std::vector<std::string> keys;
  std::string value;
  std::string delta;
  bool took_leftover = false;  // value or delta came from a word CLI11 left over
};

// The CLI11 objects whose presence matters after parsing.
struct Parsed {
  CLI::Option* endpoint = nullptr;
  CLI::Option* timeout = nullptr;
  CLI::Option* dialect = nullptr;
  CLI::Option* raw_keys = nullptr;
  CLI::Option* value = nullptr;
  CLI::Option* delta = nullptr;
  std::vector<CLI::Option*> limits;  // in the order of StoreServeOptions
  bool raw_keys_flag = false;
};

// "--max-key-bytes,--max_key_bytes": both spellings, as the launch options have.
std::string both_spellings(std::string_view dash_name) {
  std::string snake(dash_name);
  std::replace(snake.begin(), snake.end(), '-', '_');
  if (snake == dash_name) return "--" + snake;
  return "--" + std::string(dash_name) + ",--" + snake;
}

CLI::App* add_subcommand(CLI::App& app, std::string_view name) {
  for (const Subcommand& sub : k_subcommands) {
    if (sub.name == name) return app.add_subcommand(std::string(name), std::string(sub.help));
  }
  return nullptr;
}

void build_app(CLI::App& app, Words& words, Parsed& parsed) {
  app.description(std::string(k_description));
  app.require_subcommand(0, 1);
  app.allow_extras();  // take_leftovers() judges what CLI11 could not place
  const std::string client_group = "Client options (for every command but serve)";
  parsed.endpoint = app.add_option("--endpoint", words.endpoint, "The store, as HOST:PORT")
                        ->type_name("HOST:PORT")
                        ->group(client_group);
  parsed.timeout = app.add_option("--timeout", words.timeout,
                                  "Limit for connecting and for each operation, a wait included")
                       ->type_name("SECONDS")
                       ->default_str("300")
                       ->group(client_group);
  parsed.dialect =
      app.add_option("--dialect", words.dialect,
                     "validated: PyTorch 2.x or gangrun's store; legacy: PyTorch 1.13's store")
          ->type_name("validated|legacy")
          ->default_str("validated")
          ->group(client_group);
  parsed.raw_keys = app.add_flag(both_spellings("raw-keys"), parsed.raw_keys_flag,
                                 "Send keys as typed, without the \"/\" PyTorch puts first")
                        ->group(client_group);

  CLI::App* serve = add_subcommand(app, "serve");
  serve->add_option("--host", words.host, "Address or name to bind; \"::\" for every interface")
      ->type_name("HOST")
      ->default_str("127.0.0.1");
  serve->add_option("--port", words.port, "Port to listen on; 0 for any free port")
      ->type_name("PORT")
      ->default_str(std::to_string(k_default_port));
  serve
      ->add_option(both_spellings("port-file"), words.port_file,
                   "Write the port listened on to FILE once listening")
      ->type_name("FILE");
  parsed.limits = {
      serve->add_option(both_spellings("max-key-bytes"), words.max_key_bytes,
                        "Longest key; a client sending a longer one is disconnected"),
      serve->add_option(both_spellings("max-value-bytes"), words.max_value_bytes,
                        "Longest value; a client sending a longer one is disconnected"),
      serve->add_option(both_spellings("max-keys-per-request"), words.max_keys_per_request,
                        "Most keys in one CHECK, WAIT or MULTI_GET/SET"),
      serve->add_option(both_spellings("max-store-bytes"), words.max_store_bytes,
                        "Most bytes of keys and values held in all"),
      serve->add_option(both_spellings("max-connections"), words.max_connections,
                        "Most client connections open at once"),
  };
  for (CLI::Option* limit : parsed.limits) limit->type_name("N");

  auto key_argument = [&](CLI::App* sub) {
    sub->add_option("KEY", words.key, "The key")->required()->type_name("");
  };
  auto key_list = [&](CLI::App* sub) {
    sub->add_option("KEY", words.keys, "The keys")->required()->type_name("");
  };
  key_argument(add_subcommand(app, "get"));
  CLI::App* set = add_subcommand(app, "set");
  key_argument(set);
  parsed.value =
      set->add_option("VALUE", words.value, "The value; default: standard input")->type_name("");
  CLI::App* add = add_subcommand(app, "add");
  key_argument(add);
  parsed.delta = add->add_option("DELTA", words.delta, "A whole number, default 1")->type_name("");
  key_list(add_subcommand(app, "wait"));
  key_list(add_subcommand(app, "check"));
  key_argument(add_subcommand(app, "delete"));
  add_subcommand(app, "keys");
  add_subcommand(app, "num-keys")->alias("num_keys");

  // A repeated option takes its last value, as the launch options do.
  auto last_wins = [](CLI::App& each) {
    for (CLI::Option* option : each.get_options()) {
      if (!option->get_positional()) option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  };
  last_wins(app);
  for (CLI::App* sub : app.get_subcommands({})) {
    last_wins(*sub);
    sub->fallthrough();
    sub->allow_extras();
    if (sub != serve) sub->footer(std::string(k_client_footer));
  }
  app.footer(std::string(k_footer));
}

// ---- did you mean ------------------------------------------------------------

// The candidate closest to typed, if it is close enough to be a typo.
std::string closest(std::string_view typed, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, typed.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    std::size_t distance = strings::edit_distance(typed, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string subcommand_names() {
  std::vector<std::string> names;
  for (const Subcommand& sub : k_subcommands) names.emplace_back(sub.name);
  return strings::join(names, ", ");
}

std::vector<std::string> option_spellings(const CLI::App& app) {
  std::vector<std::string> spellings;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) spellings.push_back("--" + name);
  }
  return spellings;
}

// ---- values ------------------------------------------------------------------

Expected<int> parse_port(const std::string& text, const std::string& what, int lowest) {
  std::optional<std::int64_t> port = strings::parse_int(strings::trim(text));
  if (!port || *port < lowest || *port > 65535) {
    return usage(what + ": '" + text + "' is not a port number (" + std::to_string(lowest) +
                 "..65535)");
  }
  return static_cast<int>(*port);
}

Expected<std::chrono::milliseconds> parse_timeout(const std::string& text) {
  std::optional<double> seconds = strings::parse_double(strings::trim(text));
  if (!seconds || !std::isfinite(*seconds) || *seconds <= 0 ||
      *seconds > k_longest_timeout_seconds) {
    return usage("--timeout: '" + text + "' is not a number of seconds greater than 0");
  }
  auto ms = static_cast<std::int64_t>(std::ceil(*seconds * 1000.0));
  return std::chrono::milliseconds(std::max<std::int64_t>(ms, 1));
}

Expected<std::size_t> parse_limit(const CLI::Option& option, const std::string& text) {
  std::optional<std::int64_t> number = strings::parse_int(strings::trim(text));
  if (!number || *number <= 0) {
    return usage(option.get_name() + ": '" + text + "' is not a whole number greater than 0");
  }
  return static_cast<std::size_t>(*number);
}

// ---- assembling the command --------------------------------------------------

// Words CLI11 could not place. set and add take one as their value even when
// it starts with '-' ("add n -1"); anything else is an error.
Expected<void> take_leftovers(const CLI::App& app, const CLI::App& sub, StoreAction action,
                              Words& words, const Parsed& parsed) {
  // CLI11 keeps a "--" it met while positionals were still open; it has done its job.
  std::vector<std::string> leftovers;
  for (std::string& word : app.remaining(true)) {
    if (word != "--") leftovers.push_back(std::move(word));
  }
  if (leftovers.empty()) return {};
  const std::string& word = leftovers.front();
  CLI::Option* slot = action == StoreAction::set   ? parsed.value
                      : action == StoreAction::add ? parsed.delta
                                                   : nullptr;
  bool looks_like_option = word.starts_with("--");
  if (leftovers.size() == 1 && slot != nullptr && slot->count() == 0 && !looks_like_option) {
    (action == StoreAction::set ? words.value : words.delta) = word;
    words.took_leftover = true;
    return {};
  }
  std::string where = "store " + sub.get_name();
  if (word.size() > 1 && word.front() == '-') {
    std::string spelling = word.substr(0, word.find('='));
    std::vector<std::string> known = option_spellings(app);
    std::vector<std::string> own = option_spellings(sub);
    known.insert(known.end(), own.begin(), own.end());
    if (std::find(known.begin(), known.end(), spelling) != known.end()) {
      return usage(where + ": unexpected argument '" + word +
                   "' (after --, every word is an argument; put options before --)");
    }
    std::string message = where + ": unknown option '" + spelling + "'";
    if (std::string close = closest(spelling, known); !close.empty()) {
      message += "; did you mean " + close + "?";
    }
    if (slot != nullptr) message += " (write -- before a value that starts with '-')";
    return usage(message + " (see gangrun " + where + " --help)");
  }
  return usage(where + ": unexpected argument '" + word + "' (see gangrun " + where + " --help)");
}

Error no_subcommand(const CLI::App& app) {
  for (const std::string& word : app.remaining(true)) {
    if (word.starts_with("-")) continue;
    std::vector<std::string> names;
    for (const Subcommand& sub : k_subcommands) names.emplace_back(sub.name);
    std::string message = "store: unknown command '" + word + "'";
    if (std::string close = closest(word, names); !close.empty()) {
      message += "; did you mean " + close + "?";
    }
    return Error(ErrorCode::usage, message + " (commands: " + subcommand_names() + ")");
  }
  for (const std::string& word : app.remaining(true)) {
    std::string spelling = word.substr(0, word.find('='));
    std::string message = "store: unknown option '" + spelling + "'";
    if (std::string close = closest(spelling, option_spellings(app)); !close.empty()) {
      message += "; did you mean " + close + "?";
    }
    return Error(ErrorCode::usage, message);
  }
  return Error(ErrorCode::usage, "store: missing command, one of " + subcommand_names() +
                                     " (see gangrun store --help)");
}

Expected<StoreServeOptions> serve_options(const Words& words, const Parsed& parsed) {
  for (const CLI::Option* option :
       {parsed.endpoint, parsed.timeout, parsed.dialect, parsed.raw_keys}) {
    if (option->count() > 0) {
      return usage("store serve: " + option->get_name() +
                   " is for the client commands; serve takes --host and --port");
    }
  }
  StoreServeOptions serve;
  serve.host = std::string(strings::trim(words.host));
  if (serve.host.size() > 2 && serve.host.front() == '[' && serve.host.back() == ']') {
    serve.host = serve.host.substr(1, serve.host.size() - 2);
  }
  if (serve.host.empty()) return usage("--host: empty; give an address or a host name");
  Expected<int> port = parse_port(words.port, "--port", 0);
  if (!port) return tl::unexpected(port.error());
  serve.port = *port;
  serve.port_file = words.port_file;
  std::array<std::optional<std::size_t>*, 5> limits = {
      &serve.max_key_bytes, &serve.max_value_bytes, &serve.max_keys_per_request,
      &serve.max_store_bytes, &serve.max_connections};
  const std::array<const std::string*, 5> texts = {&words.max_key_bytes, &words.max_value_bytes,
                                                   &words.max_keys_per_request,
                                                   &words.max_store_bytes, &words.max_connections};
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (parsed.limits[i]->count() == 0) continue;
    Expected<std::size_t> limit = parse_limit(*parsed.limits[i], *texts[i]);
    if (!limit) return tl::unexpected(limit.error());
    *limits[i] = *limit;
  }
  return serve;
}

Expected<HostPort> default_endpoint(const EnvMap& env) {
  if (std::optional<std::string> text = env_lookup(env, "GANGRUN_STORE_ENDPOINT")) {
    return parse_endpoint(*text, "GANGRUN_STORE_ENDPOINT");
  }
  HostPort endpoint{"127.0.0.1", k_default_port};
  if (std::optional<std::string> addr = env_lookup(env, "MASTER_ADDR");
      addr && !strings::trim(*addr).empty()) {
    endpoint.host = std::string(strings::trim(*addr));
  }
  if (std::optional<std::string> port = env_lookup(env, "MASTER_PORT")) {
    Expected<int> number = parse_port(*port, "MASTER_PORT", 1);
    if (!number) return tl::unexpected(number.error());
    endpoint.port = *number;
  }
  return endpoint;
}

Expected<StoreClientOptions> client_options(const Words& words, const Parsed& parsed,
                                            const EnvMap& env) {
  StoreClientOptions client;
  Expected<HostPort> endpoint = parsed.endpoint->count() > 0
                                    ? parse_endpoint(words.endpoint, "--endpoint")
                                    : default_endpoint(env);
  if (!endpoint) return tl::unexpected(endpoint.error());
  client.host = endpoint->host;
  client.port = endpoint->port;
  Expected<std::chrono::milliseconds> timeout = parse_timeout(words.timeout);
  if (!timeout) return tl::unexpected(timeout.error());
  client.timeout = *timeout;
  std::string dialect = strings::to_lower(strings::trim(words.dialect));
  if (dialect == "validated") {
    client.dialect = StoreDialect::validated;
  } else if (dialect == "legacy") {
    client.dialect = StoreDialect::legacy;
  } else {
    return usage("--dialect: '" + words.dialect + "' is neither validated nor legacy");
  }
  client.raw_keys = parsed.raw_keys_flag;
  return client;
}

Expected<std::int64_t> parse_delta(const std::string& text) {
  std::optional<std::int64_t> delta = strings::parse_int(strings::trim(text));
  if (!delta) return usage("store add: DELTA '" + text + "' is not a whole number");
  return *delta;
}

}  // namespace

Expected<HostPort> parse_endpoint(const std::string& text, const std::string& what) {
  std::string_view rest = strings::trim(text);
  HostPort endpoint{"", k_default_port};
  std::string_view port_text;
  bool has_port = false;
  if (rest.starts_with("[")) {
    std::size_t close = rest.find(']');
    if (close == std::string_view::npos || close == 1) {
      return usage(what + ": '" + text + "' is not HOST:PORT or [IPV6]:PORT");
    }
    endpoint.host = std::string(rest.substr(1, close - 1));
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(":")) {
        return usage(what + ": '" + text + "' is not HOST:PORT or [IPV6]:PORT");
      }
      port_text = after.substr(1);
      has_port = true;
    }
  } else {
    std::size_t colon = rest.find(':');
    if (colon != std::string_view::npos && rest.find(':', colon + 1) != std::string_view::npos) {
      return usage(what + ": '" + text + "': write an IPv6 address in brackets, as [ADDR]:PORT");
    }
    endpoint.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      has_port = true;
    }
  }
  if (endpoint.host.empty()) return usage(what + ": '" + text + "' has no host (HOST:PORT)");
  if (has_port) {
    Expected<int> port = parse_port(std::string(port_text), what, 1);
    if (!port) return tl::unexpected(port.error());
    endpoint.port = *port;
  }
  return endpoint;
}

Expected<StoreCommand> parse_store_command(const std::vector<std::string>& args,
                                           const EnvMap& env) {
  CLI::App app(std::string(k_description), "gangrun store");
  Words words;
  Parsed parsed;
  build_app(app, words, parsed);
  StoreCommand command;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    command.help_text = app.help();
    return command;
  } catch (const CLI::ParseError& error) {
    std::vector<CLI::App*> chosen = app.get_subcommands();
    std::string where = chosen.empty() ? "store" : "store " + chosen.front()->get_name();
    return usage(where + ": " + error.what() + " (see gangrun " + where + " --help)");
  }

  std::vector<CLI::App*> chosen = app.get_subcommands();
  if (chosen.empty()) return tl::unexpected(no_subcommand(app));
  const CLI::App& sub = *chosen.front();
  for (const Subcommand& known : k_subcommands) {
    if (known.name == sub.get_name()) command.action = known.action;
  }
  if (Expected<void> placed = take_leftovers(app, sub, command.action, words, parsed); !placed) {
    return tl::unexpected(placed.error());
  }

  if (command.action == StoreAction::serve) {
    Expected<StoreServeOptions> serve = serve_options(words, parsed);
    if (!serve) return tl::unexpected(serve.error());
    command.serve = std::move(*serve);
    return command;
  }
  Expected<StoreClientOptions> client = client_options(words, parsed, env);
  if (!client) return tl::unexpected(client.error());
  command.client = std::move(*client);
  if (command.action == StoreAction::keys && command.client.dialect == StoreDialect::legacy) {
    return usage(
        "store keys: needs --dialect validated (PyTorch 1.13's store cannot list its keys)");
  }
  if (command.action == StoreAction::wait || command.action == StoreAction::check) {
    command.keys = words.keys;
  } else if (command.action != StoreAction::keys && command.action != StoreAction::num_keys) {
    command.keys = {words.key};
  }
  if (command.action == StoreAction::set && (parsed.value->count() > 0 || words.took_leftover)) {
    command.value = words.value;
  }
  if (command.action == StoreAction::add && (parsed.delta->count() > 0 || words.took_leftover)) {
    Expected<std::int64_t> delta = parse_delta(words.delta);
    if (!delta) return tl::unexpected(delta.error());
    command.delta = *delta;
  }
  return command;
}

}  // namespace gangrun::config
