// A client of Foyer game lobbies, on .NET Standard 2.0 (Unity, Godot .NET,
// Mono, .NET): list a lobby's rooms, create one or join one, and get a
// seat: where the room's game server listens.
//
// Each request is sent up to Attempts times, Timeout apart, with the same
// sequence id, so a lobby that already acted on it answers from its retry
// cache instead of acting twice. Replies are matched by sequence id;
// anything else reaching the socket (strays, bad CRCs) is dropped. The
// native protocol (both framings, LZ4-compressed lists) is in Codec.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Threading;
using System.Threading.Tasks;

namespace Foyer
{
    /// <summary>The header a datagram uses: 8 bytes, or the original game's 17.</summary>
    public enum Framing { Compact, Legacy }

    public enum MessageType : byte
    {
        ListRooms = 0x40, RoomList = 0x41, CreateRoom = 0x42, RoomCreated = 0x43,
        JoinRoom = 0x44, JoinSuccess = 0x45, JoinFailed = 0x46,
    }

    public enum RoomState : byte { Waiting = 0, Countdown = 1, Playing = 2, Finished = 3 }

    /// <summary>Why a lobby refused. A seed lobby never says: Unspecified.</summary>
    public enum Reason
    {
        Unspecified, NotFound, Full, Started, WrongPassword, Quota, RateLimited, NoCapacity, Draining, Denied,
    }

    /// <summary>Every error of this library.</summary>
    public class FoyerException : Exception
    {
        public FoyerException(string message) : base(message) { }
    }

    /// <summary>No attempt got its reply in time.</summary>
    public class FoyerTimeoutException : FoyerException
    {
        public FoyerTimeoutException(string message) : base(message) { }
    }

    /// <summary>The lobby said no (JOIN_FAILED), for Reason.</summary>
    public class FoyerRefusedException : FoyerException
    {
        public Reason Reason { get; }
        public FoyerRefusedException(string message, Reason reason) : base(message) { Reason = reason; }
    }

    /// <summary>Nothing listens on the lobby's port (ICMP port unreachable).</summary>
    public class FoyerUnreachableException : FoyerException
    {
        public FoyerUnreachableException(string message) : base(message) { }
    }

    /// <summary>The verb or option needs Foyer's protocol extension, which this lobby does not speak.</summary>
    public class FoyerNotSupportedException : FoyerException
    {
        public FoyerNotSupportedException(string message) : base(message) { }
    }

    /// <summary>The client was disposed.</summary>
    public class FoyerClosedException : FoyerException
    {
        public FoyerClosedException(string message) : base(message) { }
    }

    /// <summary>Codec.Decode refused a datagram; Reason is the protocol's label ("crc", ...).</summary>
    public class MalformedPacketException : FoyerException
    {
        public string Reason { get; }
        public MalformedPacketException(string reason) : base("malformed datagram: " + reason) { Reason = reason; }
    }

    public sealed class Room
    {
        public uint Id { get; set; }
        public ushort Players { get; set; }
        public ushort MaxPlayers { get; set; }
        public ushort Port { get; set; }
        public RoomState State { get; set; }
        // Carried by Foyer's protocol extension; empty from a seed lobby.
        public string Name { get; set; } = "";
        public string Mode { get; set; } = "";
        public string Map { get; set; } = "";
        public IReadOnlyDictionary<string, string> Tags { get; set; } = new Dictionary<string, string>();
    }

    /// <summary>A place the lobby holds for this client: send the game traffic to Address:Port.</summary>
    public sealed class Seat
    {
        public uint Room { get; set; }
        public IPAddress Address { get; set; }
        public ushort Port { get; set; }
        /// <summary>A seat token and its expiry come with the extension; null from a seed lobby.</summary>
        public byte[] Token { get; set; }
        public DateTimeOffset? Expires { get; set; }
    }

    /// <summary>Which rooms List and QuickJoin want. A seed lobby filters by State and FreeSeats only.</summary>
    public sealed class Filter
    {
        public RoomState? State { get; set; }
        public int FreeSeats { get; set; }
        public string Mode { get; set; }
        public string Map { get; set; }
        public string NamePrefix { get; set; }
        public IDictionary<string, string> Tags { get; set; }

        internal void Check()
        {
            if (!string.IsNullOrEmpty(Mode) || !string.IsNullOrEmpty(Map) || !string.IsNullOrEmpty(NamePrefix) ||
                (Tags != null && Tags.Count > 0))
                throw new FoyerNotSupportedException("filtering by mode, map, name or tags is not supported by this lobby");
        }

        public bool Matches(Room r) =>
            (State == null || r.State == State) && r.MaxPlayers - r.Players >= FreeSeats;
    }

    /// <summary>What a new room is to be; a seed lobby takes none of it.</summary>
    public sealed class CreateOptions
    {
        public string Name { get; set; }
        public string Mode { get; set; }
        public string Map { get; set; }
        public IDictionary<string, string> Tags { get; set; }
        public bool Private { get; set; }
        public string Password { get; set; }
    }

    public sealed class ClientOptions
    {
        /// <summary>How long one attempt waits for its reply (default 5 s).</summary>
        public TimeSpan Timeout { get; set; } = TimeSpan.FromSeconds(5);
        /// <summary>How many times a request is sent, always with the same sequence id (default 3).</summary>
        public int Attempts { get; set; } = 3;
        /// <summary>The header requests are written in; replies are read in either.</summary>
        public Framing Framing { get; set; } = Framing.Compact;
    }

    /// <summary>One decoded datagram.</summary>
    public sealed class Message
    {
        public Framing Framing { get; set; }
        public MessageType Type { get; set; }
        public ushort Seq { get; set; }
        public uint Tick { get; set; }
        public bool Compressed { get; set; }
        public uint Room { get; set; }
        public ushort Port { get; set; }
        public IReadOnlyList<Room> Rooms { get; set; } = new Room[0];
    }

    /// <summary>The native protocol, as docs/protocol.md says it.</summary>
    public static class Codec
    {
        public const int MaxRooms = 5037;
        static readonly byte[] Magic = { 0xA3, 0x5F, 0xC8, 0x1D };
        static readonly uint[] CrcTable = MakeCrcTable();

        static uint[] MakeCrcTable()
        {
            var t = new uint[256];
            for (uint n = 0; n < 256; n++)
            {
                uint c = n;
                for (int k = 0; k < 8; k++) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
                t[n] = c;
            }
            return t;
        }

        /// <summary>The IEEE CRC-32 of b[0..n), as zlib computes it.</summary>
        public static uint Crc32(byte[] b, int offset, int n)
        {
            uint c = 0xFFFFFFFFu;
            for (int i = offset; i < offset + n; i++) c = CrcTable[(c ^ b[i]) & 0xFF] ^ (c >> 8);
            return c ^ 0xFFFFFFFFu;
        }

        static ushort U16(byte[] b, int i) => (ushort)(b[i] << 8 | b[i + 1]);
        static uint U32(byte[] b, int i) => (uint)(b[i] << 24 | b[i + 1] << 16 | b[i + 2] << 8 | b[i + 3]);
        static void Put16(byte[] b, int i, int v) { b[i] = (byte)(v >> 8); b[i + 1] = (byte)v; }
        static void Put32(byte[] b, int i, uint v) { Put16(b, i, (int)(v >> 16)); Put16(b, i + 2, (int)v); }

        /// <summary>The datagram of a LIST_ROOMS, CREATE_ROOM or JOIN_ROOM (room) request.</summary>
        public static byte[] EncodeRequest(MessageType type, ushort seq, Framing framing = Framing.Compact,
                                           uint tick = 0, uint room = 0)
        {
            if (type != MessageType.ListRooms && type != MessageType.CreateRoom && type != MessageType.JoinRoom)
                throw new ArgumentException(type + " is not a request", nameof(type));
            int n = type == MessageType.JoinRoom ? 4 : 0, hl = framing == Framing.Legacy ? 17 : 8;
            var b = new byte[hl + n + 4];
            if (framing == Framing.Legacy)
            {
                Array.Copy(Magic, b, 4);
                b[4] = 1; b[5] = 1; b[6] = (byte)type;
                Put16(b, 7, seq); Put32(b, 9, tick); Put16(b, 13, n); Put16(b, 15, n);
            }
            else
            {
                b[0] = 1; b[1] = (byte)type;
                Put16(b, 2, seq); Put16(b, 4, n); Put16(b, 6, n);
            }
            if (n > 0) Put32(b, hl, room);
            Put32(b, hl + n, Crc32(b, 0, hl + n));
            return b;
        }

        static bool IsRequest(int t) => t == 0x40 || t == 0x42 || t == 0x44;

        static bool Holds(int t, int n)
        {
            switch ((MessageType)t)
            {
                case MessageType.JoinRoom: return n == 4;
                case MessageType.RoomCreated: case MessageType.JoinSuccess: return n == 6;
                case MessageType.RoomList: return n >= 2 && (n - 2) % 11 == 0;
                default: return n == 0;
            }
        }

        /// <summary>Checks one datagram in either framing, in the protocol's order, and returns it.</summary>
        /// <exception cref="MalformedPacketException">names the first rule it breaks.</exception>
        public static Message Decode(byte[] b, int len)
        {
            bool legacy = len > 0 && b[0] == 0xA3, flagged = false;
            int hl = legacy ? 17 : 8, dir, t, n, original;
            var m = new Message { Framing = legacy ? Framing.Legacy : Framing.Compact };
            if (len < hl + 4) throw new MalformedPacketException("short");
            if (legacy)
            {
                if (b[0] != Magic[0] || b[1] != Magic[1] || b[2] != Magic[2] || b[3] != Magic[3] || (b[4] & 0x7F) != 1)
                    throw new MalformedPacketException("magic");
                flagged = (b[4] & 0x80) != 0;
                dir = b[5]; t = b[6]; m.Seq = U16(b, 7); m.Tick = U32(b, 9);
                n = U16(b, 13); original = U16(b, 15);
            }
            else
            {
                dir = b[0]; t = b[1]; m.Seq = U16(b, 2); n = U16(b, 4); original = U16(b, 6);
            }
            if (len != hl + n + 4) throw new MalformedPacketException("length");
            if (U32(b, hl + n) != Crc32(b, 0, hl + n)) throw new MalformedPacketException("crc");
            if (dir != 1 && dir != 2) throw new MalformedPacketException("packet_type");
            if (t < 0x40 || t > 0x46) throw new MalformedPacketException("unknown_type");
            if ((dir == 1) != IsRequest(t)) throw new MalformedPacketException("direction");
            if (legacy && !flagged && original == 0) original = n; // the original game's encoder leaves it 0
            m.Compressed = original > n;
            if (original < n || (legacy && flagged != m.Compressed)) throw new MalformedPacketException("compression");
            byte[] p = b;
            int at = hl;
            if (m.Compressed)
            {
                if (!Holds(t, original) || original > 255 * n + 16) throw new MalformedPacketException("compression");
                p = Lz4Decompress(b, hl, n, original);
                at = 0;
                n = original;
            }
            m.Type = (MessageType)t;
            if (m.Type == MessageType.RoomList)
            {
                m.Rooms = DecodeRooms(p, at, n);
                return m;
            }
            if (!Holds(t, n)) throw new MalformedPacketException("payload_size");
            if (n >= 4) m.Room = U32(p, at);
            if (n == 6) m.Port = U16(p, at + 4);
            return m;
        }

        static Room[] DecodeRooms(byte[] p, int at, int n)
        {
            if (n < 2 || n != 2 + 11 * U16(p, at)) throw new MalformedPacketException("payload_size");
            int count = U16(p, at);
            if (count > MaxRooms) throw new MalformedPacketException("room_count");
            var rooms = new Room[count];
            for (int i = 0; i < count; i++)
            {
                int e = at + 2 + 11 * i;
                if (p[e + 10] > 3) throw new MalformedPacketException("room_state");
                rooms[i] = new Room
                {
                    Id = U32(p, e), Players = U16(p, e + 4), MaxPlayers = U16(p, e + 6), Port = U16(p, e + 8),
                    State = (RoomState)p[e + 10],
                };
            }
            return rooms;
        }

        /// <summary>Inflates one LZ4 block (no frame) of src[offset..offset+n) to exactly size bytes.</summary>
        public static byte[] Lz4Decompress(byte[] src, int offset, int n, int size)
        {
            var bad = new MalformedPacketException("compression");
            var dst = new byte[size];
            int i = offset, end = offset + n, o = 0;
            while (true)
            {
                if (i >= end) throw bad;
                int token = src[i++], lit = token >> 4;
                if (lit == 15) lit = Length(src, ref i, end, lit);
                if (lit > end - i || lit > size - o) throw bad;
                Array.Copy(src, i, dst, o, lit);
                i += lit;
                o += lit;
                if (i == end) break; // the last sequence is literals only
                if (end - i < 2) throw bad;
                int off = src[i] | src[i + 1] << 8;
                i += 2;
                int ml = token & 15;
                if (ml == 15) ml = Length(src, ref i, end, ml);
                ml += 4;
                if (off == 0 || off > o || ml > size - o) throw bad;
                for (; ml > 0; ml--, o++) dst[o] = dst[o - off]; // a match may overlap what it writes
            }
            if (o != size) throw bad;
            return dst;
        }

        static int Length(byte[] src, ref int i, int end, int len)
        {
            while (true)
            {
                if (i >= end) throw new MalformedPacketException("compression");
                int x = src[i++];
                len += x;
                if (x != 255) return len;
            }
        }
    }

    /// <summary>A client of one lobby, from one UDP socket; its requests may run concurrently.</summary>
    public sealed class Client : IDisposable
    {
        const int RefusedPauseMs = 250; // after "port unreachable", before trying again

        readonly Socket socket;
        readonly string lobby;
        readonly IPAddress address;
        readonly ClientOptions options;
        readonly ConcurrentDictionary<ushort, Call> pending = new ConcurrentDictionary<ushort, Call>();
        readonly CancellationTokenSource closed = new CancellationTokenSource();
        int seq;
        volatile bool answered; // the lobby answered once: it has seen this client receive

        sealed class Call
        {
            public MessageType Type;
            public uint Room;
            public readonly TaskCompletionSource<Message> Reply =
                new TaskCompletionSource<Message>(TaskCreationOptions.RunContinuationsAsynchronously);
            public volatile TaskCompletionSource<bool> Refused;
        }

        Client(Socket socket, string lobby, IPAddress address, ClientOptions options)
        {
            this.socket = socket;
            this.lobby = lobby;
            this.address = address;
            this.options = options;
            seq = new Random().Next(0x10000);
            Task.Run(ReadLoop);
        }

        /// <summary>The IP address of the lobby, where its rooms are.</summary>
        public IPAddress Address => address;

        /// <summary>Resolves the lobby's address ("host:port") and opens a socket to it.</summary>
        public static async Task<Client> ConnectAsync(string lobby, ClientOptions options = null)
        {
            int colon = lobby.LastIndexOf(':');
            if (colon < 0) throw new ArgumentException("lobby address " + lobby + " has no port", nameof(lobby));
            string host = lobby.Substring(0, colon).Trim('[', ']');
            int port = int.Parse(lobby.Substring(colon + 1));
            IPAddress ip;
            if (!IPAddress.TryParse(host, out ip)) ip = (await Dns.GetHostAddressesAsync(host).ConfigureAwait(false))[0];
            var s = new Socket(ip.AddressFamily, SocketType.Dgram, ProtocolType.Udp);
            s.Connect(new IPEndPoint(ip, port));
            var o = options ?? new ClientOptions();
            o = new ClientOptions
            {
                Timeout = o.Timeout > TimeSpan.Zero ? o.Timeout : TimeSpan.FromSeconds(5),
                Attempts = o.Attempts > 0 ? o.Attempts : 3,
                Framing = o.Framing,
            };
            return new Client(s, host + ":" + port, ip, o);
        }

        /// <summary>The lobby's rooms that filter matches (a seed lobby filters by State and FreeSeats only).</summary>
        public async Task<IReadOnlyList<Room>> ListAsync(Filter filter = null, CancellationToken ct = default(CancellationToken))
        {
            filter?.Check();
            var m = await Do(MessageType.ListRooms, 0, ct).ConfigureAwait(false);
            return filter == null ? m.Rooms : m.Rooms.Where(filter.Matches).ToList();
        }

        /// <summary>Starts a room and holds a seat in it for this client.</summary>
        public async Task<Seat> CreateAsync(CreateOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            if (options != null && (!string.IsNullOrEmpty(options.Name) || !string.IsNullOrEmpty(options.Mode) ||
                                    !string.IsNullOrEmpty(options.Map) || !string.IsNullOrEmpty(options.Password) ||
                                    options.Private || (options.Tags != null && options.Tags.Count > 0)))
                throw new FoyerNotSupportedException("room options are not supported by this lobby");
            if (!answered) await ListAsync(null, ct).ConfigureAwait(false); // a lobby starts few rooms for senders it never answered
            return ToSeat(MessageType.CreateRoom, 0, await Do(MessageType.CreateRoom, 0, ct).ConfigureAwait(false));
        }

        /// <summary>Holds a seat in room id.</summary>
        public async Task<Seat> JoinAsync(uint room, string password = null, CancellationToken ct = default(CancellationToken))
        {
            if (!string.IsNullOrEmpty(password)) throw new FoyerNotSupportedException("passwords are not supported by this lobby");
            return ToSeat(MessageType.JoinRoom, room, await Do(MessageType.JoinRoom, room, ct).ConfigureAwait(false));
        }

        /// <summary>Holds a seat in the room of a join code: needs the extension.</summary>
        public Task<Seat> JoinAsync(string code, string password = null, CancellationToken ct = default(CancellationToken)) =>
            Task.FromException<Seat>(new FoyerNotSupportedException("joining by code is not supported by this lobby"));

        /// <summary>Joins the fullest room filter matches, or creates one: needs the extension.</summary>
        public Task<Seat> QuickJoinAsync(Filter filter = null, CancellationToken ct = default(CancellationToken)) =>
            Task.FromException<Seat>(new FoyerNotSupportedException("quick join is not supported by this lobby"));

        /// <summary>Closes the socket; requests in flight fail with FoyerClosedException.</summary>
        public void Dispose()
        {
            if (closed.IsCancellationRequested) return;
            closed.Cancel();
            socket.Dispose();
        }

        string Op(MessageType t, uint room) =>
            t == MessageType.ListRooms ? "list " + lobby : t == MessageType.CreateRoom ? "create " + lobby : "join " + lobby + " room " + room;

        Seat ToSeat(MessageType t, uint room, Message m)
        {
            if (m.Type == MessageType.JoinFailed)
                throw new FoyerRefusedException(Op(t, room) + ": lobby answered JOIN_FAILED (" +
                    (t == MessageType.CreateRoom ? "the lobby could not start a room" : "room unknown, full, or not waiting") + ")",
                    Reason.Unspecified);
            return new Seat { Room = m.Room, Address = address, Port = m.Port };
        }

        static bool Answers(Call c, Message m)
        {
            switch (c.Type)
            {
                case MessageType.ListRooms: return m.Type == MessageType.RoomList;
                case MessageType.CreateRoom: return m.Type == MessageType.RoomCreated || m.Type == MessageType.JoinFailed;
                default: return m.Type == MessageType.JoinFailed || (m.Type == MessageType.JoinSuccess && m.Room == c.Room);
            }
        }

        async Task<Message> Do(MessageType type, uint room, CancellationToken ct)
        {
            if (closed.IsCancellationRequested) throw new FoyerClosedException(Op(type, room) + ": client closed");
            var call = new Call { Type = type, Room = room };
            ushort id;
            do id = (ushort)Interlocked.Increment(ref seq); while (!pending.TryAdd(id, call));
            var pkt = Codec.EncodeRequest(type, id, options.Framing, 0, room);
            bool refused = false;
            using (var stop = CancellationTokenSource.CreateLinkedTokenSource(ct, closed.Token))
            {
                try
                {
                    for (int attempt = 0; attempt < options.Attempts; attempt++)
                    {
                        if (attempt > 0 && refused)
                            await Task.Delay(TimeSpan.FromMilliseconds(Math.Min(RefusedPauseMs, options.Timeout.TotalMilliseconds)), stop.Token).ConfigureAwait(false);
                        refused = false;
                        var refusal = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
                        call.Refused = refusal;
                        try { socket.Send(pkt); }
                        catch (SocketException e) when (IsRefusal(e)) { refused = true; continue; }
                        var timeout = Task.Delay(options.Timeout, stop.Token);
                        var done = await Task.WhenAny(call.Reply.Task, refusal.Task, timeout).ConfigureAwait(false);
                        if (done == call.Reply.Task)
                        {
                            answered = true;
                            return call.Reply.Task.Result;
                        }
                        refused = done == refusal.Task;
                        stop.Token.ThrowIfCancellationRequested();
                    }
                }
                catch (OperationCanceledException) when (closed.IsCancellationRequested)
                {
                    throw new FoyerClosedException(Op(type, room) + ": client closed");
                }
                catch (ObjectDisposedException)
                {
                    throw new FoyerClosedException(Op(type, room) + ": client closed");
                }
                finally
                {
                    Call gone;
                    pending.TryRemove(id, out gone);
                }
            }
            if (refused) throw new FoyerUnreachableException(Op(type, room) + ": nothing listens on that port (port unreachable)");
            throw new FoyerTimeoutException(Op(type, room) + ": timeout: no " +
                (type == MessageType.ListRooms ? "ROOM_LIST" : type == MessageType.CreateRoom ? "ROOM_CREATED or JOIN_FAILED" : "JOIN_SUCCESS or JOIN_FAILED") +
                " after " + options.Attempts + " attempts of " + options.Timeout.TotalSeconds + "s");
        }

        static bool IsRefusal(SocketException e) =>
            e.SocketErrorCode == SocketError.ConnectionRefused || e.SocketErrorCode == SocketError.ConnectionReset;

        async Task ReadLoop()
        {
            var buf = new byte[65536];
            while (!closed.IsCancellationRequested)
            {
                int n;
                try
                {
                    n = await socket.ReceiveAsync(new ArraySegment<byte>(buf), SocketFlags.None).ConfigureAwait(false);
                }
                catch (SocketException e) when (IsRefusal(e))
                {
                    foreach (var c in pending.Values) c.Refused?.TrySetResult(true);
                    continue;
                }
                catch (Exception)
                {
                    return; // disposed
                }
                Message m;
                try { m = Codec.Decode(buf, n); }
                catch (MalformedPacketException) { continue; }
                Call call;
                if (pending.TryGetValue(m.Seq, out call) && Answers(call, m)) call.Reply.TrySetResult(m);
            }
        }
    }
}
