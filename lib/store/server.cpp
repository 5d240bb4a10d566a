#include "store/server.hpp"
