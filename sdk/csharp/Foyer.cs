// A client of Foyer game lobbies, on .NET Standard 2.0 (Unity, Godot .NET,
// Mono, .NET): list a lobby's rooms, create one or join one, and get a
// seat: where the room's game server listens.
//
// Each request is sent up to Attempts times, Timeout apart, with the same
// sequence id, so a lobby that already acted on it answers from its retry
// cache instead of acting twice. Replies are matched by sequence id;
// anything else reaching the socket (strays, bad CRCs) is dropped. The
// native protocol (both framings, LZ4-compressed lists) is in Codec.
//
// Foyer's extension (names, filters, codes, passwords, quick join, seat
// tokens) is spoken to a lobby that answers it, as the Go client does: the
// first extension request also lists the seed way, and a lobby that answers
// only that, or nothing within a second, is a seed lobby for the client's
// life; verbs then fall back to the seed messages where they can and throw
// FoyerNotSupportedException where they cannot. The client echoes the retry
// token the lobby hands out (EXT_RETRY) and pads its requests until it has one.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Text;
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
        ExtList = 0x80, ExtRooms = 0x81, ExtCreate = 0x82, ExtSeat = 0x83,
        ExtJoin = 0x84, ExtRefused = 0x85, ExtQuick = 0x86, ExtRetry = 0x87,
        ExtPresent = 0x88, ExtAdmitted = 0x89,
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

    /// <summary>The lobby said no (JOIN_FAILED, or EXT_REFUSED with its Reason).</summary>
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
        public string Code { get; set; } = "";
        public bool HasPassword { get; set; }
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
        /// <summary>The room's join code; "" from a seed lobby.</summary>
        public string Code { get; set; } = "";
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

    /// <summary>What a new room is to be; a seed lobby takes none of it (and refuses Private and Password).</summary>
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
        /// <summary>The room of a seed reply, EXT_SEAT or EXT_ADMITTED.</summary>
        public uint Room { get; set; }
        public ushort Port { get; set; }
        public IReadOnlyList<Room> Rooms { get; set; } = new Room[0];
        /// <summary>EXT_RETRY: the token to echo.</summary>
        public byte[] Token { get; set; }
        /// <summary>EXT_SEAT: the room's code, where it runs (null: the lobby's address), the seat's token.</summary>
        public string Code { get; set; } = "";
        public IPAddress Address { get; set; }
        public byte[] SeatToken { get; set; }
        /// <summary>EXT_ROOMS: the cursor of the next page, 0 after the last.</summary>
        public uint Next { get; set; }
        /// <summary>EXT_REFUSED: why.</summary>
        public Reason Reason { get; set; }
    }

    /// <summary>An extension request, as Codec.EncodeExt writes it.</summary>
    public sealed class ExtRequest
    {
        public MessageType Type { get; set; }
        public ushort Seq { get; set; }
        public Framing Framing { get; set; }
        public uint Tick { get; set; }
        /// <summary>The lobby's retry token, echoed; null for none.</summary>
        public byte[] Token { get; set; }
        /// <summary>Zero bytes the request ends with.</summary>
        public int Pad { get; set; }
        /// <summary>The client's own 8-byte id, which its seat token binds.</summary>
        public byte[] Client { get; set; } = new byte[8];
        public Filter Filter { get; set; }
        public uint Cursor { get; set; }
        public byte Limit { get; set; }
        public CreateOptions Options { get; set; }
        public string Password { get; set; }
        public uint Room { get; set; }
        public string Code { get; set; }
        /// <summary>EXT_PRESENT: the seat's token.</summary>
        public byte[] SeatToken { get; set; }
    }

    /// <summary>One page of rooms, and the cursor of the next (0 after the last).</summary>
    public sealed class Page
    {
        public IReadOnlyList<Room> Rooms { get; set; }
        public uint Next { get; set; }
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
            var p = new byte[type == MessageType.JoinRoom ? 4 : 0];
            if (p.Length > 0) Put32(p, 0, room);
            return Frame(type, seq, framing, tick, p);
        }

        static byte[] Frame(MessageType type, ushort seq, Framing framing, uint tick, byte[] p)
        {
            int n = p.Length, hl = framing == Framing.Legacy ? 17 : 8;
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
            Array.Copy(p, 0, b, hl, n);
            Put32(b, hl + n, Crc32(b, 0, hl + n));
            return b;
        }

        static bool IsRequest(int t) => t == 0x40 || t == 0x42 || t == 0x44 || (t >= 0x80 && t % 2 == 0);

        static bool Holds(int t, int n)
        {
            if (t >= 0x80) return n <= ExtMaxPayload;
            switch ((MessageType)t)
            {
                case MessageType.JoinRoom: return n == 4;
                case MessageType.RoomCreated: case MessageType.JoinSuccess: return n == 6;
                case MessageType.RoomList: return n >= 2 && (n - 2) % 11 == 0;
                default: return n == 0;
            }
        }

        /// <summary>Checks one datagram in either framing, in the protocol's order, and returns it. Of the
        /// extension it reads the lobby's replies; its requests are the lobby's to read ("unknown_type" here).</summary>
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
            if ((t < 0x40 || t > 0x46) && t != 0x81 && t != 0x83 && t != 0x85 && t != 0x87 && t != 0x89)
                throw new MalformedPacketException("unknown_type");
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
            if (t >= 0x80) return DecodeExt(m, p, at, n);
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

        // The extension.

        /// <summary>The longest extension payload: a 1200-byte compact datagram's.</summary>
        public const int ExtMaxPayload = 1200 - 8 - 4;
        /// <summary>The letters of join codes.</summary>
        public const string CodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ";
        static readonly UTF8Encoding Strict = new UTF8Encoding(false, true);

        static void Field(bool ok)
        {
            if (!ok) throw new ArgumentException("extension field out of range");
        }

        static bool ValidText(byte[] b, int at, int n)
        {
            string s;
            try { s = Strict.GetString(b, at, n); }
            catch (ArgumentException) { return false; }
            return s.All(c => c >= 0x20 && (c < 0x7F || c >= 0xA0));
        }

        static bool ValidKey(string k) =>
            k.Length > 0 && k.Length <= 16 && k.All(c => (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.');

        /// <summary>Whether s is a join code: 6 letters of CodeAlphabet.</summary>
        public static bool ValidCode(string s) => s != null && s.Length == 6 && s.All(c => CodeAlphabet.IndexOf(c) >= 0);

        sealed class Writer
        {
            public readonly List<byte> B = new List<byte>();
            public void U8(int v) => B.Add((byte)v);
            public void U32(uint v) { for (int i = 24; i >= 0; i -= 8) B.Add((byte)(v >> i)); }
            public void Blob(byte[] b)
            {
                b = b ?? new byte[0];
                Field(b.Length <= 64);
                U8(b.Length);
                B.AddRange(b);
            }
            public void Text(string s, int most)
            {
                var b = Encoding.UTF8.GetBytes(s ?? "");
                Field(b.Length <= most && ValidText(b, 0, b.Length));
                U8(b.Length);
                B.AddRange(b);
            }
            public void Tags(IDictionary<string, string> tags)
            {
                tags = tags ?? new Dictionary<string, string>();
                Field(tags.Count <= 4 && tags.Keys.All(ValidKey));
                U8(tags.Count);
                foreach (var t in tags) { Text(t.Key, 16); Text(t.Value, 32); }
            }
            public void Filter(Filter f)
            {
                f = f ?? new Filter();
                Field(f.FreeSeats >= 0 && f.FreeSeats <= 255);
                U8(f.State == null ? 0 : 1 << (int)f.State);
                U8(f.FreeSeats);
                Text(f.Mode, 16); Text(f.Map, 32); Text(f.NamePrefix, 32); Tags(f.Tags);
            }
        }

        /// <summary>The datagram of an extension request (EXT_LIST, EXT_CREATE, EXT_JOIN, EXT_QUICK, and
        /// EXT_PRESENT to a room).</summary>
        /// <exception cref="ArgumentException">a field out of its range.</exception>
        public static byte[] EncodeExt(ExtRequest m)
        {
            var w = new Writer();
            w.U8(1);
            if (m.Type == MessageType.ExtPresent) // to a room: its seat token, never padded
            {
                Field(m.SeatToken != null && m.SeatToken.Length > 0);
                w.Blob(m.SeatToken);
                return Frame(m.Type, m.Seq, m.Framing, m.Tick, w.B.ToArray());
            }
            w.Blob(m.Token);
            Field(m.Client != null && m.Client.Length == 8);
            switch (m.Type)
            {
                case MessageType.ExtList:
                    w.U32(m.Cursor); w.U8(m.Limit); w.Filter(m.Filter);
                    break;
                case MessageType.ExtCreate:
                    var o = m.Options ?? new CreateOptions();
                    w.B.AddRange(m.Client); w.U8(o.Private ? 1 : 0);
                    w.Text(o.Name, 32); w.Text(o.Mode, 16); w.Text(o.Map, 32); w.Tags(o.Tags); w.Text(o.Password, 64);
                    break;
                case MessageType.ExtJoin:
                    Field((m.Room == 0) != string.IsNullOrEmpty(m.Code) && (string.IsNullOrEmpty(m.Code) || ValidCode(m.Code)));
                    w.B.AddRange(m.Client); w.U32(m.Room);
                    w.U8(string.IsNullOrEmpty(m.Code) ? 0 : 6);
                    if (!string.IsNullOrEmpty(m.Code)) w.B.AddRange(Encoding.ASCII.GetBytes(m.Code));
                    w.Text(m.Password, 64);
                    break;
                case MessageType.ExtQuick:
                    w.B.AddRange(m.Client); w.Filter(m.Filter);
                    break;
                default:
                    throw new ArgumentException(m.Type + " is not an extension request");
            }
            w.B.AddRange(new byte[m.Pad]);
            Field(w.B.Count <= ExtMaxPayload);
            return Frame(m.Type, m.Seq, m.Framing, m.Tick, w.B.ToArray());
        }

        // Reader reads an extension payload front to back; MalformedPacketException at the first fault.
        sealed class Reader
        {
            readonly byte[] p;
            public int At, End;
            public Reader(byte[] p, int at, int n) { this.p = p; At = at; End = at + n; }
            public int Take(int n)
            {
                if (n > End - At) throw new MalformedPacketException("ext_short");
                At += n;
                return At - n;
            }
            public int U8() => p[Take(1)];
            public ushort U16() => Codec.U16(p, Take(2));
            public uint U32() => Codec.U32(p, Take(4));
            public static void Check(bool ok) { if (!ok) throw new MalformedPacketException("ext_field"); }
            public byte[] Bytes(int n) { int i = Take(n); var b = new byte[n]; Array.Copy(p, i, b, 0, n); return b; }
            public string Text(int most)
            {
                int n = U8(), i = Take(n);
                Check(n <= most && ValidText(p, i, n));
                return Encoding.UTF8.GetString(p, i, n);
            }
            public string Code()
            {
                string s = Encoding.ASCII.GetString(p, Take(6), 6);
                Check(ValidCode(s));
                return s;
            }
            public byte[] Blob()
            {
                int n = U8();
                Check(n <= 64);
                return Bytes(n);
            }
            public Dictionary<string, string> Tags()
            {
                int n = U8();
                Check(n <= 4);
                var t = new Dictionary<string, string>();
                for (int k = 0; k < n; k++)
                {
                    string key = Text(16), value = Text(32);
                    Check(ValidKey(key) && !t.ContainsKey(key));
                    t[key] = value;
                }
                return t;
            }
        }

        static Message DecodeExt(Message m, byte[] p, int at, int n)
        {
            var r = new Reader(p, at, n);
            if (r.U8() != 1) throw new MalformedPacketException("ext_version");
            switch (m.Type)
            {
                case MessageType.ExtRooms:
                    m.Next = r.U32();
                    int count = r.U8();
                    var rooms = new List<Room>();
                    for (int k = 0; k < count; k++)
                    {
                        if (r.End - r.At < 22) throw new MalformedPacketException("ext_short"); // count is backed before it is read
                        var room = new Room { Id = r.U32(), Players = r.U16(), MaxPlayers = r.U16(), Port = r.U16() };
                        int state = r.U8(), flags = r.U8();
                        Reader.Check(state <= 3 && (flags & ~1) == 0);
                        room.State = (RoomState)state;
                        room.HasPassword = flags == 1;
                        room.Code = r.Code();
                        room.Name = r.Text(32); room.Mode = r.Text(16); room.Map = r.Text(32); room.Tags = r.Tags();
                        rooms.Add(room);
                    }
                    m.Rooms = rooms;
                    break;
                case MessageType.ExtSeat:
                    m.Room = r.U32(); m.Port = r.U16(); m.Code = r.Code();
                    var a = r.Bytes(r.U8());
                    Reader.Check(a.Length == 0 || a.Length == 4 ||
                        (a.Length == 16 && !(a.Take(10).All(x => x == 0) && a[10] == 0xFF && a[11] == 0xFF)));
                    if (a.Length > 0) m.Address = new IPAddress(a);
                    m.SeatToken = r.Blob();
                    break;
                case MessageType.ExtRefused:
                    int why = r.U8();
                    m.Reason = why <= (int)Reason.Denied ? (Reason)why : Reason.Unspecified;
                    break;
                case MessageType.ExtAdmitted:
                    m.Room = r.U32();
                    break;
                default: // EXT_RETRY
                    m.Token = r.Blob();
                    Reader.Check(m.Token.Length > 0);
                    break;
            }
            if (r.At != r.End) throw new MalformedPacketException("ext_trailing");
            return m;
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
        static readonly TimeSpan ProbeTimeout = TimeSpan.FromSeconds(1); // the first extension request's wait
        static readonly TimeSpan ProbeGrace = TimeSpan.FromMilliseconds(200); // after a seed answer to the probe
        /// <summary>A request without a retry token is padded to this many bytes.</summary>
        public const int PadTo = 64;
        const int MaxPages = 4096;

        readonly Socket socket;
        readonly string lobby;
        readonly IPAddress address;
        readonly ClientOptions options;
        readonly ConcurrentDictionary<ushort, Call> pending = new ConcurrentDictionary<ushort, Call>();
        readonly CancellationTokenSource closed = new CancellationTokenSource();
        readonly byte[] clientId = new byte[8]; // this client's id, which its seat tokens bind
        readonly object gate = new object();
        Task<bool> ext; // whether the lobby speaks the extension, once asked
        volatile byte[] token; // the lobby's retry token
        int seq;
        volatile bool answered; // the lobby answered once: it has seen this client receive

        sealed class Call
        {
            public Func<Message, bool> Match;
            public readonly TaskCompletionSource<Message> Reply =
                new TaskCompletionSource<Message>(TaskCreationOptions.RunContinuationsAsynchronously);
            public volatile TaskCompletionSource<bool> Refused;
        }

        // Ask is one exchange: Pkt(seq) sent up to Attempts times, each waiting Timeout for a reply Match
        // takes. A probe also sends a seed LIST once, whose answer leaves the extension's ProbeGrace more.
        sealed class Ask
        {
            public string Op, Awaiting;
            public Func<ushort, byte[]> Pkt;
            public Func<Message, bool> Match;
            public TimeSpan Timeout;
            public int Attempts;
            public bool Probe;
        }

        Client(Socket socket, string lobby, IPAddress address, ClientOptions options)
        {
            this.socket = socket;
            this.lobby = lobby;
            this.address = address;
            this.options = options;
            seq = new Random().Next(0x10000);
            using (var rng = RandomNumberGenerator.Create()) rng.GetBytes(clientId);
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

        /// <summary>Every room filter matches, page after page (a seed lobby filters by State and FreeSeats only).</summary>
        public async Task<IReadOnlyList<Room>> ListAsync(Filter filter = null, CancellationToken ct = default(CancellationToken))
        {
            var rooms = new List<Room>();
            uint cursor = 0;
            for (int k = 0; k < MaxPages; k++)
            {
                Page page = null;
                try { page = await PageAsync(filter, cursor, 0, ct).ConfigureAwait(false); }
                catch (FoyerNotSupportedException) { }
                if (page == null)
                {
                    filter?.Check();
                    var m = await Seed(MessageType.ListRooms, 0, ct).ConfigureAwait(false);
                    return filter == null ? m.Rooms : m.Rooms.Where(filter.Matches).ToList();
                }
                rooms.AddRange(page.Rooms);
                if (page.Next == 0 || page.Next <= cursor) break;
                cursor = page.Next;
            }
            return rooms;
        }

        /// <summary>One page of the rooms filter matches after cursor (0: from the first), at most limit (0: as many
        /// as fit a datagram); needs the extension.</summary>
        public async Task<Page> PageAsync(Filter filter = null, uint cursor = 0, byte limit = 0, CancellationToken ct = default(CancellationToken))
        {
            var r = await AskExt("list " + lobby, new ExtRequest { Type = MessageType.ExtList, Filter = filter, Cursor = cursor, Limit = limit }, ct)
                .ConfigureAwait(false);
            return new Page { Rooms = r.Rooms, Next = r.Next };
        }

        /// <summary>Starts a room and holds a seat in it for this client.</summary>
        public async Task<Seat> CreateAsync(CreateOptions options = null, CancellationToken ct = default(CancellationToken))
        {
            var o = options ?? new CreateOptions();
            try
            {
                return ExtSeat(await AskExt("create " + lobby, new ExtRequest { Type = MessageType.ExtCreate, Client = clientId, Options = o }, ct)
                    .ConfigureAwait(false));
            }
            catch (FoyerNotSupportedException) when (!o.Private && string.IsNullOrEmpty(o.Password)) { }
            return await SeedSeat(MessageType.CreateRoom, 0, ct).ConfigureAwait(false);
        }

        /// <summary>Holds a seat in room id, with its password if it has one.</summary>
        public async Task<Seat> JoinAsync(uint room, string password = null, CancellationToken ct = default(CancellationToken))
        {
            try
            {
                return ExtSeat(await AskExt(Op(MessageType.JoinRoom, room),
                    new ExtRequest { Type = MessageType.ExtJoin, Client = clientId, Room = room, Password = password }, ct).ConfigureAwait(false));
            }
            catch (FoyerNotSupportedException) when (string.IsNullOrEmpty(password)) { }
            return await SeedSeat(MessageType.JoinRoom, room, ct).ConfigureAwait(false);
        }

        /// <summary>Holds a seat in the room of a join code (any case), with its password if it has one.</summary>
        public async Task<Seat> JoinAsync(string code, string password = null, CancellationToken ct = default(CancellationToken))
        {
            code = (code ?? "").ToUpperInvariant();
            string op = "join " + lobby + " code " + code;
            if (!Codec.ValidCode(code)) throw new ArgumentException(op + ": not a join code (6 letters of " + Codec.CodeAlphabet + ")");
            return ExtSeat(await AskExt(op, new ExtRequest { Type = MessageType.ExtJoin, Client = clientId, Code = code, Password = password }, ct)
                .ConfigureAwait(false));
        }

        /// <summary>Holds a seat in the fullest joinable room filter matches, or in a new one.</summary>
        public async Task<Seat> QuickJoinAsync(Filter filter = null, CancellationToken ct = default(CancellationToken))
        {
            try
            {
                return ExtSeat(await AskExt("quick " + lobby, new ExtRequest { Type = MessageType.ExtQuick, Client = clientId, Filter = filter }, ct)
                    .ConfigureAwait(false));
            }
            catch (FoyerNotSupportedException) { }
            foreach (var r in (await ListAsync(filter, ct).ConfigureAwait(false)).OrderByDescending(r => r.Players))
            {
                if ((r.State == RoomState.Waiting || r.State == RoomState.Countdown) && r.Players < r.MaxPlayers)
                {
                    try { return await JoinAsync(r.Id, null, ct).ConfigureAwait(false); }
                    catch (FoyerException) { }
                }
            }
            return await CreateAsync(null, ct).ConfigureAwait(false);
        }

        /// <summary>Closes the socket; requests in flight fail with FoyerClosedException.</summary>
        public void Dispose()
        {
            if (closed.IsCancellationRequested) return;
            closed.Cancel();
            socket.Dispose();
        }

        string Op(MessageType t, uint room) =>
            t == MessageType.ListRooms ? "list " + lobby : t == MessageType.CreateRoom ? "create " + lobby : "join " + lobby + " room " + room;

        async Task<Message> Seed(MessageType t, uint room, CancellationToken ct)
        {
            if (t == MessageType.CreateRoom && !answered) await Seed(MessageType.ListRooms, 0, ct).ConfigureAwait(false);
            var m = await Exchange(new Ask
            {
                Op = Op(t, room), Timeout = options.Timeout, Attempts = options.Attempts,
                Awaiting = t == MessageType.ListRooms ? "ROOM_LIST" : t == MessageType.CreateRoom ? "ROOM_CREATED or JOIN_FAILED" : "JOIN_SUCCESS or JOIN_FAILED",
                Pkt = id => Codec.EncodeRequest(t, id, options.Framing, 0, room),
                Match = r => t == MessageType.ListRooms ? r.Type == MessageType.RoomList
                    : t == MessageType.CreateRoom ? r.Type == MessageType.RoomCreated || r.Type == MessageType.JoinFailed
                    : r.Type == MessageType.JoinFailed || (r.Type == MessageType.JoinSuccess && r.Room == room),
            }, ct).ConfigureAwait(false);
            answered = true;
            if (m.Type == MessageType.JoinFailed)
                throw new FoyerRefusedException(Op(t, room) + ": lobby answered JOIN_FAILED (" +
                    (t == MessageType.CreateRoom ? "the lobby could not start a room" : "room unknown, full, or not waiting") + ")",
                    Reason.Unspecified);
            return m;
        }

        async Task<Seat> SeedSeat(MessageType t, uint room, CancellationToken ct)
        {
            var m = await Seed(t, room, ct).ConfigureAwait(false);
            return new Seat { Room = m.Room, Address = address, Port = m.Port };
        }

        Seat ExtSeat(Message m)
        {
            var t = m.SeatToken;
            DateTimeOffset? expires = null;
            if (t != null && t.Length == 41 && t[0] == 1)
                expires = DateTimeOffset.FromUnixTimeSeconds((long)((uint)(t[21] << 24 | t[22] << 16 | t[23] << 8 | t[24])));
            return new Seat { Room = m.Room, Address = m.Address ?? address, Port = m.Port, Token = t, Expires = expires, Code = m.Code };
        }

        Ask ExtAsk(string op, ExtRequest req, TimeSpan timeout, int attempts, bool probe = false)
        {
            var tok = token;
            var want = req.Type == MessageType.ExtList ? MessageType.ExtRooms : MessageType.ExtSeat;
            return new Ask
            {
                Op = op, Timeout = timeout, Attempts = attempts, Probe = probe,
                Awaiting = (want == MessageType.ExtRooms ? "EXT_ROOMS" : "EXT_SEAT") + " or EXT_REFUSED",
                Pkt = id =>
                {
                    req.Seq = id; req.Framing = options.Framing; req.Token = tok; req.Pad = 0;
                    var b = Codec.EncodeExt(req);
                    if (tok != null) return b;
                    req.Pad = Math.Max(PadTo - b.Length, 0);
                    return Codec.EncodeExt(req);
                },
                Match = m => m.Type == want || m.Type == MessageType.ExtRetry || m.Type == MessageType.ExtRefused,
            };
        }

        async Task<bool> Probe(string op)
        {
            try
            {
                var r = await Exchange(ExtAsk(op, new ExtRequest { Type = MessageType.ExtList, Limit = 1 },
                    ProbeTimeout < options.Timeout ? ProbeTimeout : options.Timeout, 1, true), CancellationToken.None).ConfigureAwait(false);
                if (r.Type == MessageType.ExtRetry) token = r.Token;
                return true;
            }
            catch (FoyerTimeoutException) { return false; }
            catch (FoyerUnreachableException) { return false; }
            catch (Exception)
            {
                lock (gate) ext = null;
                throw;
            }
        }

        async Task<Message> AskExt(string op, ExtRequest req, CancellationToken ct)
        {
            Task<bool> speaks;
            lock (gate) speaks = ext = ext ?? Probe(op);
            if (!await speaks.ConfigureAwait(false)) throw new FoyerNotSupportedException(op + ": the lobby does not speak the extension");
            for (int k = 0; k < 3; k++)
            {
                var r = await Exchange(ExtAsk(op, req, options.Timeout, options.Attempts), ct).ConfigureAwait(false);
                if (r.Type == MessageType.ExtRetry)
                {
                    token = r.Token;
                    continue;
                }
                if (r.Type == MessageType.ExtRefused)
                    throw new FoyerRefusedException(op + ": lobby refused: " + r.Reason, r.Reason);
                answered = true;
                return r;
            }
            throw new FoyerTimeoutException(op + ": the lobby asks for a retry token again and again");
        }

        ushort Register(Call call)
        {
            ushort id;
            do id = (ushort)Interlocked.Increment(ref seq); while (!pending.TryAdd(id, call));
            return id;
        }

        async Task<Message> Exchange(Ask a, CancellationToken ct)
        {
            if (closed.IsCancellationRequested) throw new FoyerClosedException(a.Op + ": client closed");
            var call = new Call { Match = a.Match };
            var seed = a.Probe ? new Call { Match = r => r.Type == MessageType.RoomList } : null;
            ushort id = Register(call), seedId = seed == null ? (ushort)0 : Register(seed);
            var never = new TaskCompletionSource<Message>().Task;
            bool refused = false;
            using (var stop = CancellationTokenSource.CreateLinkedTokenSource(ct, closed.Token))
            {
                try
                {
                    if (seed != null)
                    {
                        try { socket.Send(Codec.EncodeRequest(MessageType.ListRooms, seedId, options.Framing)); }
                        catch (SocketException e) when (IsRefusal(e)) { }
                    }
                    var pkt = a.Pkt(id);
                    for (int attempt = 0; attempt < a.Attempts; attempt++)
                    {
                        if (attempt > 0 && refused)
                            await Task.Delay(TimeSpan.FromMilliseconds(Math.Min(RefusedPauseMs, a.Timeout.TotalMilliseconds)), stop.Token).ConfigureAwait(false);
                        refused = false;
                        var refusal = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
                        call.Refused = refusal;
                        try { socket.Send(pkt); }
                        catch (SocketException e) when (IsRefusal(e)) { refused = true; continue; }
                        var timeout = Task.Delay(a.Timeout, stop.Token);
                        var done = await Task.WhenAny(call.Reply.Task, refusal.Task, timeout, seed?.Reply.Task ?? never).ConfigureAwait(false);
                        if (seed != null && done == seed.Reply.Task)
                        {
                            seed = null;
                            done = await Task.WhenAny(call.Reply.Task, refusal.Task, timeout, Task.Delay(ProbeGrace, stop.Token)).ConfigureAwait(false);
                        }
                        if (done == call.Reply.Task) return call.Reply.Task.Result;
                        refused = done == refusal.Task;
                        stop.Token.ThrowIfCancellationRequested();
                    }
                }
                catch (OperationCanceledException) when (closed.IsCancellationRequested)
                {
                    throw new FoyerClosedException(a.Op + ": client closed");
                }
                catch (ObjectDisposedException)
                {
                    throw new FoyerClosedException(a.Op + ": client closed");
                }
                finally
                {
                    Call gone;
                    pending.TryRemove(id, out gone);
                    if (a.Probe) pending.TryRemove(seedId, out gone);
                }
            }
            if (refused) throw new FoyerUnreachableException(a.Op + ": nothing listens on that port (port unreachable)");
            throw new FoyerTimeoutException(a.Op + ": timeout: no " + a.Awaiting + " after " + a.Attempts + " attempts of " +
                a.Timeout.TotalSeconds + "s");
        }

        /// <summary>Shows seat's token to its room from socket, the game's UDP socket, until the room answers
        /// EXT_ADMITTED, attempts times at most (0: 3), each waiting timeout (zero: 5 s): the room's door then admits
        /// the socket's address into the seat, wherever it is (a new socket takes the seat back after a drop). socket
        /// is connected to seat.Address, seat.Port, or not connected at all. A connected socket sends to its peer, and
        /// the kernel passes it only its peer's datagrams. An unconnected socket stays unconnected: each attempt is
        /// sent to seat.Address, seat.Port (from an IPv6 socket to an IPv4 address, to its IPv4-mapped form), and a
        /// datagram from any other address or port is dropped. It reads socket meanwhile and drops what else comes;
        /// call it before reading socket for the game.</summary>
        /// <exception cref="FoyerTimeoutException">no EXT_ADMITTED came (a door drops a token it does not take
        /// unanswered).</exception>
        /// <exception cref="ArgumentException">the seat has no token (a seed lobby's).</exception>
        public static void Present(Socket socket, Seat seat, TimeSpan timeout = default(TimeSpan), int attempts = 0)
        {
            string op = "present " + seat.Address + ":" + seat.Port + " room " + seat.Room;
            if (seat.Token == null || seat.Token.Length == 0) throw new ArgumentException(op + ": the seat has no token (a seed lobby's)");
            timeout = timeout > TimeSpan.Zero ? timeout : TimeSpan.FromSeconds(5);
            attempts = attempts > 0 ? attempts : 3;
            var pkt = Codec.EncodeExt(new ExtRequest { Type = MessageType.ExtPresent, SeatToken = seat.Token });
            var buf = new byte[65536];
            // room is where an unconnected socket sends, in its own family; null for a connected socket.
            IPEndPoint room = null;
            if (!HasPeer(socket))
            {
                var to = Unmapped(seat.Address);
                if (socket.AddressFamily == AddressFamily.InterNetworkV6 && to.AddressFamily == AddressFamily.InterNetwork) to = to.MapToIPv6();
                room = new IPEndPoint(to, seat.Port);
            }
            var any = socket.AddressFamily == AddressFamily.InterNetworkV6 ? IPAddress.IPv6Any : IPAddress.Any;
            for (int attempt = 0; attempt < attempts; attempt++)
            {
                try
                {
                    if (room != null)
                    {
                        try { socket.SendTo(pkt, room); }
                        // Mono's RemoteEndPoint is null for a connected socket once a send or a read on it failed
                        // (refused); a BSD kernel then refuses the sendto: the socket is connected after all.
                        catch (SocketException e) when (e.SocketErrorCode == SocketError.IsConnected) { room = null; }
                    }
                    if (room == null) socket.Send(pkt);
                }
                catch (SocketException e) when (IsRefusal(e)) { } // an earlier datagram was refused: this one may reach it
                var clock = System.Diagnostics.Stopwatch.StartNew();
                for (TimeSpan left = timeout; left > TimeSpan.Zero; left = timeout - clock.Elapsed)
                {
                    if (!socket.Poll((int)Math.Max(left.Ticks / 10, 1), SelectMode.SelectRead)) break; // the attempt's time is up
                    int n;
                    EndPoint from = new IPEndPoint(any, 0);
                    try { n = room == null ? socket.Receive(buf) : socket.ReceiveFrom(buf, ref from); }
                    catch (SocketException e) when (IsRefusal(e)) { continue; }
                    if (room != null && !FromSeat((IPEndPoint)from, seat)) continue; // another peer's datagram
                    try
                    {
                        var m = Codec.Decode(buf, n);
                        if (m.Type == MessageType.ExtAdmitted && m.Room == seat.Room) return;
                    }
                    catch (MalformedPacketException) { }
                }
            }
            throw new FoyerTimeoutException(op + ": timeout: no EXT_ADMITTED after " + attempts + " attempts of " + timeout.TotalSeconds + "s");
        }

        /// <summary>Present on the thread pool.</summary>
        public static Task PresentAsync(Socket socket, Seat seat, TimeSpan timeout = default(TimeSpan), int attempts = 0) =>
            Task.Run(() => Present(socket, seat, timeout, attempts));

        // HasPeer tells whether socket is connected. Mono answers NotConnected (its getpeername's error), not null,
        // for an unconnected socket that has sent or read.
        static bool HasPeer(Socket socket)
        {
            try { return socket.RemoteEndPoint != null; }
            catch (SocketException e) when (e.SocketErrorCode == SocketError.NotConnected) { return false; }
        }

        // FromSeat tells whether a datagram's source is seat's address and port, an IPv4-mapped address as its IPv4 one.
        static bool FromSeat(IPEndPoint source, Seat seat) => source.Port == seat.Port && Unmapped(source.Address).Equals(Unmapped(seat.Address));

        static IPAddress Unmapped(IPAddress a) => a.IsIPv4MappedToIPv6 ? a.MapToIPv4() : a;

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
                if (pending.TryGetValue(m.Seq, out call) && call.Match(m)) call.Reply.TrySetResult(m);
            }
        }
    }
}
