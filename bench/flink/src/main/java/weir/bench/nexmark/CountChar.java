package weir.bench.nexmark;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.ScalarFunction;

/**
 * q14's count_char(s, c): how many bytes of s's UTF-8 encoding equal the first byte of c, the
 * meaning of nexmark-flink's udf.CountChar (a null s counts 0).
 */
public final class CountChar extends ScalarFunction {
    public long eval(@DataTypeHint("STRING") StringData s, @DataTypeHint("STRING") StringData c) {
        long count = 0;
        if (s != null) {
            byte chr = c.toBytes()[0];
            for (byte b : s.toBytes()) {
                if (b == chr) {
                    count++;
                }
            }
        }
        return count;
    }
}
