#include "runtime/session_mirror.h"

#include <cstring>
#include <string>
#include <unordered_map>

#include "runtime/engine.h"
#include "runtime/session_state.h"
#include "util/error.h"

namespace k3::runtime {

namespace {

struct MirroredSnapshotDeleter {
    SessionMirror* mirror;
    int64_t id;
    void operator()(const SessionState* state) const;
};

// Reads a message's int64 fields in order, naming the field a short message lacks.
class FieldReader {
public:
    explicit FieldReader(std::span<const int64_t> fields) : fields_(fields) {}
    int64_t next(const char* what) {
        if (at_ >= fields_.size())
            throw Error(std::string("parallel job: rank 0's message ends before its ") + what);
        return fields_[at_++];
    }
    std::span<const int64_t> take(int64_t n, const char* what) {
        if (n < 0 || uint64_t(n) > fields_.size() - at_)
            throw Error(std::string("parallel job: rank 0's message has no room for its ") + what);
        const std::span<const int64_t> taken = fields_.subspan(at_, size_t(n));
        at_ += size_t(n);
        return taken;
    }
    bool done() const { return at_ == fields_.size(); }

private:
    std::span<const int64_t> fields_;
    size_t at_ = 0;
};

}  // namespace

void MirroredSnapshotDeleter::operator()(const SessionState* state) const {
    delete state;
    mirror->release(id);
}

std::string encode_session_message(const SessionMessage& message) {
    std::vector<int64_t> fields;
    fields.reserve(2 + message.released.size() + message.args.size());
    fields.push_back(int64_t(message.released.size()));
    fields.insert(fields.end(), message.released.begin(), message.released.end());
    fields.push_back(int64_t(message.op));
    fields.insert(fields.end(), message.args.begin(), message.args.end());
    return std::string(reinterpret_cast<const char*>(fields.data()), fields.size() * sizeof(int64_t));
}

SessionMessage decode_session_message(const std::string& bytes) {
    if (bytes.size() % sizeof(int64_t) != 0)
        throw Error("parallel job: rank 0's message of " + std::to_string(bytes.size()) +
                    " bytes is not a whole number of fields");
    std::vector<int64_t> fields(bytes.size() / sizeof(int64_t));
    std::memcpy(fields.data(), bytes.data(), bytes.size());
    FieldReader reader(fields);
    SessionMessage message;
    const std::span<const int64_t> released = reader.take(reader.next("released count"), "released ids");
    message.released.assign(released.begin(), released.end());
    const int64_t op = reader.next("operation");
    if (op < int64_t(SessionOp::create) || op > int64_t(SessionOp::shutdown))
        throw Error("parallel job: rank 0's message names operation " + std::to_string(op) + ", which is none");
    message.op = SessionOp(op);
    const std::span<const int64_t> args = reader.take(int64_t(fields.size()) - 2 - int64_t(released.size()), "arguments");
    message.args.assign(args.begin(), args.end());
    return message;
}

std::unique_lock<std::mutex> SessionMirror::announce(SessionOp op, std::vector<int64_t> args) {
    std::unique_lock lock(mutex_);
    SessionMessage message{{}, op, std::move(args)};
    {
        std::lock_guard released_lock(released_mutex_);
        message.released.swap(released_);
    }
    collective_.broadcast(encode_session_message(message));
    return lock;
}

SessionSnapshot SessionMirror::adopt(SessionState state, int64_t id) {
    return SessionSnapshot(new SessionState(std::move(state)), MirroredSnapshotDeleter{this, id});
}

std::optional<int64_t> SessionMirror::id_of(const SessionSnapshot& snapshot) {
    if (const auto* deleter = std::get_deleter<MirroredSnapshotDeleter>(snapshot)) return deleter->id;
    return std::nullopt;
}

void SessionMirror::release(int64_t id) {
    std::lock_guard lock(released_mutex_);
    released_.push_back(id);
}

void follow_sessions(const Engine& engine, parallel::Collective& collective) {
    std::unordered_map<int64_t, std::unique_ptr<Session>> sessions;
    std::unordered_map<int64_t, SessionSnapshot> snapshots;
    const auto session = [&](int64_t id) -> Session& {
        const auto found = sessions.find(id);
        if (found == sessions.end()) throw Error("parallel job: rank 0 names session " + std::to_string(id) + ", which this rank does not have");
        return *found->second;
    };
    for (;;) {
        const SessionMessage message = decode_session_message(collective.broadcast({}));
        for (int64_t id : message.released) snapshots.erase(id);
        FieldReader args(message.args);
        switch (message.op) {
        case SessionOp::shutdown: return;
        case SessionOp::create: sessions[args.next("session id")] = engine.new_session(); break;
        case SessionOp::destroy: sessions.erase(args.next("session id")); break;
        case SessionOp::reset: session(args.next("session id")).reset(); break;
        case SessionOp::checkpoint: session(args.next("session id")).checkpoint(); break;
        case SessionOp::snapshot: {
            Session& s = session(args.next("session id"));
            snapshots[args.next("snapshot id")] = s.snapshot();
            break;
        }
        case SessionOp::restore: {
            Session& s = session(args.next("session id"));
            const int64_t id = args.next("snapshot id");
            const auto found = snapshots.find(id);
            if (found == snapshots.end())
                throw Error("parallel job: rank 0 restores snapshot " + std::to_string(id) + ", which this rank does not have");
            s.restore(found->second);
            break;
        }
        case SessionOp::truncate: {
            Session& s = session(args.next("session id"));
            s.truncate(args.next("position"));
            break;
        }
        case SessionOp::decode: {
            int64_t next_snapshot = args.next("first snapshot id");
            std::vector<std::vector<int32_t>> tokens;
            std::vector<SequenceInput> inputs;
            const int64_t n_inputs = args.next("input count");
            for (int64_t i = 0; i < n_inputs; ++i) {
                SequenceInput input;
                input.session = &session(args.next("session id"));
                input.all_logits = args.next("all_logits") != 0;
                const std::span<const int64_t> ids = args.take(args.next("token count"), "tokens");
                tokens.emplace_back(ids.begin(), ids.end());
                const std::span<const int64_t> capture = args.take(args.next("capture count"), "capture positions");
                input.capture_at.assign(capture.begin(), capture.end());
                inputs.push_back(std::move(input));
            }
            for (size_t i = 0; i < inputs.size(); ++i) inputs[i].tokens = tokens[i];
            engine.decode(inputs);  // no logits here: a led job gathers them on rank 0 only
            for (SequenceInput& input : inputs)
                for (SessionSnapshot& captured : input.captured) snapshots[next_snapshot++] = std::move(captured);
            break;
        }
        }
        if (!args.done())
            throw Error("parallel job: rank 0's message has fields left over after its operation " +
                        std::to_string(int64_t(message.op)));
    }
}

}  // namespace k3::runtime
