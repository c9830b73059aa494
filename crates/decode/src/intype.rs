//! TDH in-types (how a field is stored) and out-types (how it is shown).
//! The numbers are TDH's (`TDH_INTYPE`, `TDH_OUTTYPE`); the names are the
//! manifest's (`win:UInt32`, `win:IPv4`) without their prefix.

/// How a field is laid out in the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InType {
    Null,
    /// UTF-16, NUL-terminated unless a length (in characters) is given.
    UnicodeString,
    /// 8-bit, NUL-terminated unless a length (in bytes) is given.
    AnsiString,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float,
    Double,
    /// Win32 BOOL: 4 bytes.
    Boolean,
    /// Bytes of a given length.
    Binary,
    Guid,
    /// Pointer-sized (the record's width).
    Pointer,
    FileTime,
    SystemTime,
    /// 8 + 4 × sub-authority count bytes.
    Sid,
    HexInt32,
    HexInt64,
    /// u16 byte count, then UTF-16 (manifest and TraceLogging counted string).
    CountedString,
    /// u16 byte count, then 8-bit characters.
    CountedAnsiString,
    /// A group of member fields (TraceLogging structs, TRACE_EVENT_INFO structs).
    Struct,
    /// u16 byte count, then bytes.
    CountedBinary,
    /// MOF counted string: u16 byte count, UTF-16.
    WbemCountedString,
    WbemCountedAnsiString,
    /// Big-endian u16 count, then UTF-16.
    ReversedCountedString,
    ReversedCountedAnsiString,
    /// UTF-16 to the end of the payload.
    NonNullTerminatedString,
    NonNullTerminatedAnsiString,
    UnicodeChar,
    AnsiChar,
    /// Pointer-sized unsigned.
    SizeT,
    /// u32 length, then bytes.
    HexDump,
    /// MOF `Sid` extension: u32 0 when absent, else TOKEN_USER (2 pointers) then a SID.
    WbemSid,
}

impl InType {
    /// From a TDH_INTYPE number.
    pub fn from_tdh(v: u16) -> Option<InType> {
        use InType::*;
        Some(match v {
            0 => Null,
            1 => UnicodeString,
            2 => AnsiString,
            3 => Int8,
            4 => UInt8,
            5 => Int16,
            6 => UInt16,
            7 => Int32,
            8 => UInt32,
            9 => Int64,
            10 => UInt64,
            11 => Float,
            12 => Double,
            13 => Boolean,
            14 => Binary,
            15 => Guid,
            16 => Pointer,
            17 => FileTime,
            18 => SystemTime,
            19 => Sid,
            20 => HexInt32,
            21 => HexInt64,
            22 => CountedString,
            23 => CountedAnsiString,
            24 => Struct,
            25 => CountedBinary,
            300 => WbemCountedString,
            301 => WbemCountedAnsiString,
            302 => ReversedCountedString,
            303 => ReversedCountedAnsiString,
            304 => NonNullTerminatedString,
            305 => NonNullTerminatedAnsiString,
            306 => UnicodeChar,
            307 => AnsiChar,
            308 => SizeT,
            309 => HexDump,
            310 => WbemSid,
            _ => return None,
        })
    }

    /// The manifest name (`win:` prefix optional) or the schema files' name.
    pub fn from_name(name: &str) -> Option<InType> {
        use InType::*;
        let name = name.strip_prefix("win:").unwrap_or(name);
        Some(match name {
            "UnicodeString" => UnicodeString,
            "AnsiString" => AnsiString,
            "Int8" => Int8,
            "UInt8" => UInt8,
            "Int16" => Int16,
            "UInt16" => UInt16,
            "Int32" => Int32,
            "UInt32" => UInt32,
            "Int64" => Int64,
            "UInt64" => UInt64,
            "Float" => Float,
            "Double" => Double,
            "Boolean" => Boolean,
            "Binary" => Binary,
            "GUID" | "Guid" => Guid,
            "Pointer" => Pointer,
            "FILETIME" | "FileTime" => FileTime,
            "SYSTEMTIME" | "SystemTime" => SystemTime,
            "SID" | "Sid" => Sid,
            "HexInt32" => HexInt32,
            "HexInt64" => HexInt64,
            "CountedUnicodeString" | "CountedString" => CountedString,
            "CountedAnsiString" => CountedAnsiString,
            "Struct" => Struct,
            "CountedBinary" => CountedBinary,
            "WbemCountedString" => WbemCountedString,
            "WbemCountedAnsiString" => WbemCountedAnsiString,
            "ReversedCountedString" => ReversedCountedString,
            "ReversedCountedAnsiString" => ReversedCountedAnsiString,
            "NonNullTerminatedString" => NonNullTerminatedString,
            "NonNullTerminatedAnsiString" => NonNullTerminatedAnsiString,
            "UnicodeChar" => UnicodeChar,
            "AnsiChar" => AnsiChar,
            "SizeT" => SizeT,
            "HexDump" => HexDump,
            "WbemSid" => WbemSid,
            _ => return None,
        })
    }

    /// The out-type TDH reports for a field whose manifest names none
    /// (winmeta.xml's default for the in-type); [`OutType::Default`] where
    /// winmeta.xml gives none.
    pub fn default_out_type(self) -> OutType {
        use InType::*;
        match self {
            UnicodeString | AnsiString | CountedString | CountedAnsiString | Sid => OutType::String,
            Int8 => OutType::Byte,
            UInt8 => OutType::UnsignedByte,
            Int16 => OutType::Short,
            UInt16 => OutType::UnsignedShort,
            Int32 => OutType::Int,
            UInt32 => OutType::UnsignedInt,
            Int64 => OutType::Long,
            UInt64 => OutType::UnsignedLong,
            Float => OutType::Float,
            Double => OutType::Double,
            Boolean => OutType::Boolean,
            Binary | CountedBinary => OutType::HexBinary,
            Guid => OutType::Guid,
            Pointer | HexInt64 => OutType::HexInt64,
            HexInt32 => OutType::HexInt32,
            FileTime | SystemTime => OutType::DateTime,
            _ => OutType::Default,
        }
    }

    /// The name a manifest gives the in-type, without its `win:` prefix
    /// (`UInt32`, `Pointer`, `UnicodeString`, `GUID`); the MOF-only types
    /// by TDH's name.
    pub fn name(self) -> &'static str {
        use InType::*;
        match self {
            Null => "Null",
            UnicodeString => "UnicodeString",
            AnsiString => "AnsiString",
            Int8 => "Int8",
            UInt8 => "UInt8",
            Int16 => "Int16",
            UInt16 => "UInt16",
            Int32 => "Int32",
            UInt32 => "UInt32",
            Int64 => "Int64",
            UInt64 => "UInt64",
            Float => "Float",
            Double => "Double",
            Boolean => "Boolean",
            Binary => "Binary",
            Guid => "GUID",
            Pointer => "Pointer",
            FileTime => "FILETIME",
            SystemTime => "SYSTEMTIME",
            Sid => "SID",
            HexInt32 => "HexInt32",
            HexInt64 => "HexInt64",
            CountedString => "CountedUnicodeString",
            CountedAnsiString => "CountedAnsiString",
            Struct => "Struct",
            CountedBinary => "CountedBinary",
            WbemCountedString => "WbemCountedString",
            WbemCountedAnsiString => "WbemCountedAnsiString",
            ReversedCountedString => "ReversedCountedString",
            ReversedCountedAnsiString => "ReversedCountedAnsiString",
            NonNullTerminatedString => "NonNullTerminatedString",
            NonNullTerminatedAnsiString => "NonNullTerminatedAnsiString",
            UnicodeChar => "UnicodeChar",
            AnsiChar => "AnsiChar",
            SizeT => "SizeT",
            HexDump => "HexDump",
            WbemSid => "WbemSid",
        }
    }

    /// Bytes of a fixed-size type (`pointer_size` for pointers); `None` if variable.
    pub fn fixed_size(self, pointer_size: u8) -> Option<usize> {
        use InType::*;
        Some(match self {
            Int8 | UInt8 | AnsiChar => 1,
            Int16 | UInt16 | UnicodeChar => 2,
            Int32 | UInt32 | Float | Boolean | HexInt32 => 4,
            Int64 | UInt64 | Double | FileTime | HexInt64 => 8,
            Guid | SystemTime => 16,
            Pointer | SizeT => usize::from(pointer_size),
            Null => 0,
            _ => return None,
        })
    }

    pub fn is_integer(self) -> bool {
        use InType::*;
        matches!(
            self,
            Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64 | HexInt32 | HexInt64 | Pointer | SizeT
        )
    }
}

/// How a field is shown (never changes its size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OutType {
    #[default]
    Default,
    String,
    DateTime,
    Byte,
    UnsignedByte,
    Short,
    UnsignedShort,
    Int,
    UnsignedInt,
    Long,
    UnsignedLong,
    Float,
    Double,
    Boolean,
    Guid,
    HexBinary,
    HexInt8,
    HexInt16,
    HexInt32,
    HexInt64,
    Pid,
    Tid,
    /// A u16 in network byte order.
    Port,
    /// A u32 in network byte order.
    Ipv4,
    /// 16 bytes.
    Ipv6,
    /// SOCKADDR bytes: family, port, address.
    SocketAddress,
    CimDateTime,
    EtwTime,
    Xml,
    ErrorCode,
    Win32Error,
    NtStatus,
    HResult,
    CultureInsensitiveDateTime,
    Json,
    Utf8,
    Pkcs7WithTypeInfo,
    CodePointer,
    DateTimeUtc,
    /// TraceLogging: do not show.
    NoPrint,
}

impl OutType {
    /// From a TDH_OUTTYPE number.
    pub fn from_tdh(v: u16) -> OutType {
        use OutType::*;
        match v {
            1 => String,
            2 => DateTime,
            3 => Byte,
            4 => UnsignedByte,
            5 => Short,
            6 => UnsignedShort,
            7 => Int,
            8 => UnsignedInt,
            9 => Long,
            10 => UnsignedLong,
            11 => Float,
            12 => Double,
            13 => Boolean,
            14 => Guid,
            15 => HexBinary,
            16 => HexInt8,
            17 => HexInt16,
            18 => HexInt32,
            19 => HexInt64,
            20 => Pid,
            21 => Tid,
            22 => Port,
            23 => Ipv4,
            24 => Ipv6,
            25 => SocketAddress,
            26 => CimDateTime,
            27 => EtwTime,
            28 => Xml,
            29 => ErrorCode,
            30 => Win32Error,
            31 => NtStatus,
            32 => HResult,
            33 => CultureInsensitiveDateTime,
            34 => Json,
            35 => Utf8,
            36 => Pkcs7WithTypeInfo,
            37 => CodePointer,
            38 => DateTimeUtc,
            301 => NoPrint,
            _ => Default,
        }
    }

    /// From a TraceLogging out-type, whose numbering differs from TDH's below 33.
    pub fn from_tracelogging(v: u8) -> OutType {
        use OutType::*;
        match v {
            1 => NoPrint,
            2 => String,
            3 => Boolean,
            4 => HexBinary,
            5 => Pid,
            6 => Tid,
            7 => Port,
            8 => Ipv4,
            9 => Ipv6,
            10 => SocketAddress,
            11 => Xml,
            12 => Json,
            13 => Win32Error,
            14 => NtStatus,
            15 => HResult,
            16 => DateTime,
            17 => Int,
            18 => UnsignedInt,
            33 => CultureInsensitiveDateTime,
            35 => Utf8,
            36 => Pkcs7WithTypeInfo,
            37 => CodePointer,
            38 => DateTimeUtc,
            _ => Default,
        }
    }

    /// The name a manifest gives the out-type, without its `xs:`/`win:`
    /// prefix; `None` for the in-type's default.
    pub fn name(self) -> Option<&'static str> {
        use OutType::*;
        Some(match self {
            Default => return None,
            String => "string",
            DateTime => "dateTime",
            Byte => "byte",
            UnsignedByte => "unsignedByte",
            Short => "short",
            UnsignedShort => "unsignedShort",
            Int => "int",
            UnsignedInt => "unsignedInt",
            Long => "long",
            UnsignedLong => "unsignedLong",
            Float => "float",
            Double => "double",
            Boolean => "boolean",
            Guid => "GUID",
            HexBinary => "hexBinary",
            HexInt8 => "HexInt8",
            HexInt16 => "HexInt16",
            HexInt32 => "HexInt32",
            HexInt64 => "HexInt64",
            Pid => "PID",
            Tid => "TID",
            Port => "Port",
            Ipv4 => "IPv4",
            Ipv6 => "IPv6",
            SocketAddress => "SocketAddress",
            CimDateTime => "CIMDateTime",
            EtwTime => "ETWTIME",
            Xml => "Xml",
            ErrorCode => "ErrorCode",
            Win32Error => "Win32Error",
            NtStatus => "NTSTATUS",
            HResult => "HResult",
            CultureInsensitiveDateTime => "DateTimeCultureInsensitive",
            Json => "Json",
            Utf8 => "Utf8",
            Pkcs7WithTypeInfo => "Pkcs7WithTypeInfo",
            CodePointer => "CodePointer",
            DateTimeUtc => "DateTimeUtc",
            NoPrint => "NoPrint",
        })
    }

    /// The manifest name (`xs:` or `win:` prefix optional) or the schema files' name.
    pub fn from_name(name: &str) -> Option<OutType> {
        use OutType::*;
        let name = name.strip_prefix("win:").or_else(|| name.strip_prefix("xs:")).unwrap_or(name);
        Some(match name {
            "string" | "String" => String,
            "dateTime" | "DateTime" => DateTime,
            "byte" => Byte,
            "unsignedByte" => UnsignedByte,
            "short" => Short,
            "unsignedShort" => UnsignedShort,
            "int" => Int,
            "unsignedInt" => UnsignedInt,
            "long" => Long,
            "unsignedLong" => UnsignedLong,
            "float" => Float,
            "double" => Double,
            "boolean" | "Boolean" => Boolean,
            "GUID" => Guid,
            "hexBinary" | "HexBinary" => HexBinary,
            "HexInt8" => HexInt8,
            "HexInt16" => HexInt16,
            "HexInt32" => HexInt32,
            "HexInt64" => HexInt64,
            "PID" => Pid,
            "TID" => Tid,
            "Port" => Port,
            "IPv4" => Ipv4,
            "IPv6" => Ipv6,
            "SocketAddress" => SocketAddress,
            "CIMDateTime" => CimDateTime,
            "ETWTIME" => EtwTime,
            "Xml" => Xml,
            "ErrorCode" => ErrorCode,
            "Win32Error" => Win32Error,
            "NTSTATUS" => NtStatus,
            "HResult" | "Hresult" => HResult,
            "DateTimeCultureInsensitive" => CultureInsensitiveDateTime,
            "Json" => Json,
            "Utf8" => Utf8,
            "Pkcs7WithTypeInfo" => Pkcs7WithTypeInfo,
            "CodePointer" => CodePointer,
            "DateTimeUtc" => DateTimeUtc,
            "NoPrint" => NoPrint,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for v in (0..=25).chain(300..=310) {
            let Some(t) = InType::from_tdh(v).filter(|t| *t != InType::Null) else { continue };
            assert_eq!(InType::from_name(t.name()), Some(t), "{t:?}");
        }
        assert_eq!((InType::Pointer.name(), InType::Guid.name()), ("Pointer", "GUID"));
        for v in 0..=40 {
            let o = OutType::from_tdh(v);
            match o.name() {
                Some(name) => assert_eq!(OutType::from_name(name), Some(o), "{o:?}"),
                None => assert_eq!(o, OutType::Default),
            }
        }
        assert_eq!(OutType::from_name("win:Hresult"), Some(OutType::HResult));
    }
}
