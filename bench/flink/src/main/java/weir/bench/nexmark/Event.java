package weir.bench.nexmark;

import java.io.IOException;
import java.io.Serializable;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonFactory;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonParser;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonToken;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;

/**
 * One Nexmark event, person, auction or bid, as a mutable holder with the union of their fields
 * (Nexmark's field names; times in epoch ms). The generator fills it, the file reader parses it,
 * and it becomes the NEXMARK table's row or a JSON line.
 */
public final class Event implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Nexmark's event_type column values. */
    public static final int PERSON = 0;
    public static final int AUCTION = 1;
    public static final int BID = 2;

    public int type;
    // person: id, name, emailAddress, creditCard, city, state, dateTime, extra
    // auction: id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra
    // bid: auction, bidder, price, channel, url, dateTime, extra
    public long id;
    public String name;
    public String emailAddress;
    public String creditCard;
    public String city;
    public String state;
    public String itemName;
    public String description;
    public long initialBid;
    public long reserve;
    public long expires;
    public long seller;
    public long category;
    public long auction;
    public long bidder;
    public long price;
    public String channel;
    public String url;
    public long dateTime;
    public String extra;

    /**
     * The row of nexmark-flink's NEXMARK table (ddl_gen.sql): event_type and one non-null nested
     * row of the event's kind, built as Nexmark's RowDataEventDeserializer builds it.
     */
    public RowData toRow() {
        GenericRowData row = new GenericRowData(4);
        row.setField(0, type);
        switch (type) {
            case PERSON -> {
                GenericRowData p = new GenericRowData(8);
                p.setField(0, id);
                p.setField(1, StringData.fromString(name));
                p.setField(2, StringData.fromString(emailAddress));
                p.setField(3, StringData.fromString(creditCard));
                p.setField(4, StringData.fromString(city));
                p.setField(5, StringData.fromString(state));
                p.setField(6, TimestampData.fromEpochMillis(dateTime));
                p.setField(7, StringData.fromString(extra));
                row.setField(1, p);
            }
            case AUCTION -> {
                GenericRowData a = new GenericRowData(10);
                a.setField(0, id);
                a.setField(1, StringData.fromString(itemName));
                a.setField(2, StringData.fromString(description));
                a.setField(3, initialBid);
                a.setField(4, reserve);
                a.setField(5, TimestampData.fromEpochMillis(dateTime));
                a.setField(6, TimestampData.fromEpochMillis(expires));
                a.setField(7, seller);
                a.setField(8, category);
                a.setField(9, StringData.fromString(extra));
                row.setField(2, a);
            }
            default -> {
                GenericRowData b = new GenericRowData(7);
                b.setField(0, auction);
                b.setField(1, bidder);
                b.setField(2, price);
                b.setField(3, StringData.fromString(channel));
                b.setField(4, StringData.fromString(url));
                b.setField(5, TimestampData.fromEpochMillis(dateTime));
                b.setField(6, StringData.fromString(extra));
                row.setField(3, b);
            }
        }
        return row;
    }

    /** The event as one JSON line (no newline), the format of `weir nexmark generate`. */
    public void toJson(StringBuilder sb) {
        switch (type) {
            case PERSON -> {
                sb.append("{\"type\":\"person\",\"id\":").append(id);
                str(sb, "name", name);
                str(sb, "emailAddress", emailAddress);
                str(sb, "creditCard", creditCard);
                str(sb, "city", city);
                str(sb, "state", state);
                sb.append(",\"dateTime\":").append(dateTime);
                str(sb, "extra", extra);
            }
            case AUCTION -> {
                sb.append("{\"type\":\"auction\",\"id\":").append(id);
                str(sb, "itemName", itemName);
                str(sb, "description", description);
                sb.append(",\"initialBid\":").append(initialBid);
                sb.append(",\"reserve\":").append(reserve);
                sb.append(",\"dateTime\":").append(dateTime);
                sb.append(",\"expires\":").append(expires);
                sb.append(",\"seller\":").append(seller);
                sb.append(",\"category\":").append(category);
                str(sb, "extra", extra);
            }
            default -> {
                sb.append("{\"type\":\"bid\",\"auction\":").append(auction);
                sb.append(",\"bidder\":").append(bidder);
                sb.append(",\"price\":").append(price);
                str(sb, "channel", channel);
                str(sb, "url", url);
                sb.append(",\"dateTime\":").append(dateTime);
                str(sb, "extra", extra);
            }
        }
        sb.append('}');
    }

    private static void str(StringBuilder sb, String key, String v) {
        sb.append(",\"").append(key).append("\":");
        Json.quote(sb, v);
    }

    private static final JsonFactory JSON = new JsonFactory();

    /**
     * Parses one JSON line into {@code e}. Unknown keys are an error, as is a missing "type" or
     * "dateTime": a file that does not hold Nexmark events should fail loudly, not run as zeros.
     */
    public static void parse(String line, Event e, long lineNo) throws IOException {
        e.clear();
        boolean sawType = false;
        boolean sawTime = false;
        try (JsonParser p = JSON.createParser(line)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("line " + lineNo + ": not a JSON object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String k = p.currentName();
                JsonToken t = p.nextToken();
                switch (k) {
                    case "type" -> {
                        sawType = true;
                        switch (p.getText()) {
                            case "person" -> e.type = PERSON;
                            case "auction" -> e.type = AUCTION;
                            case "bid" -> e.type = BID;
                            default -> throw new IOException("line " + lineNo + ": unknown type " + p.getText());
                        }
                    }
                    case "id" -> e.id = num(p, t, k, lineNo);
                    case "name" -> e.name = p.getText();
                    case "emailAddress" -> e.emailAddress = p.getText();
                    case "creditCard" -> e.creditCard = p.getText();
                    case "city" -> e.city = p.getText();
                    case "state" -> e.state = p.getText();
                    case "itemName" -> e.itemName = p.getText();
                    case "description" -> e.description = p.getText();
                    case "initialBid" -> e.initialBid = num(p, t, k, lineNo);
                    case "reserve" -> e.reserve = num(p, t, k, lineNo);
                    case "expires" -> e.expires = num(p, t, k, lineNo);
                    case "seller" -> e.seller = num(p, t, k, lineNo);
                    case "category" -> e.category = num(p, t, k, lineNo);
                    case "auction" -> e.auction = num(p, t, k, lineNo);
                    case "bidder" -> e.bidder = num(p, t, k, lineNo);
                    case "price" -> e.price = num(p, t, k, lineNo);
                    case "channel" -> e.channel = p.getText();
                    case "url" -> e.url = p.getText();
                    case "dateTime" -> {
                        sawTime = true;
                        e.dateTime = num(p, t, k, lineNo);
                    }
                    case "extra" -> e.extra = p.getText();
                    default -> throw new IOException("line " + lineNo + ": unknown field " + k);
                }
            }
        } catch (IOException ex) {
            if (ex.getMessage() != null && ex.getMessage().startsWith("line ")) {
                throw ex;
            }
            throw new IOException("line " + lineNo + ": " + ex.getMessage(), ex);
        }
        if (!sawType || !sawTime) {
            throw new IOException("line " + lineNo + ": needs \"type\" and \"dateTime\"");
        }
    }

    private static long num(JsonParser p, JsonToken t, String k, long lineNo) throws IOException {
        if (t != JsonToken.VALUE_NUMBER_INT) {
            throw new IOException("line " + lineNo + ": " + k + " must be an integer");
        }
        return p.getLongValue();
    }

    void clear() {
        type = -1;
        id = initialBid = reserve = expires = seller = category = auction = bidder = price = dateTime = 0;
        name = emailAddress = creditCard = city = state = itemName = description = channel = url = extra = null;
    }
}
